"""One language's items for one rank, epoch after epoch: the stream that both the document sampler
(row groups of a corpus folder) and the trainer's block stream (packed blocks) read through, so
that epochs, the ranks' shares and exact resume are written once. No Beam, no torch."""

from __future__ import annotations

from typing import Callable, Generic, Sequence, Tuple, TypeVar

Item = TypeVar("Item")


def rank_share(items: Sequence[Item], rank: int, world_size: int) -> Sequence[Item]:
    """Rank r of w keeps positions r, r + w, ...: the ranks' shares are disjoint and together cover ``items``."""
    return items[rank::world_size]


class EpochStream(Generic[Item]):
    """An endless sequence of one language's items for one rank, epoch after epoch.

    ``draw(epoch)`` gives every rank's items of an epoch in order (seeded by the caller, so the
    same on every run and every rank); rank r of ``world_size`` reads its ``rank_share`` of them.
    The position, ``epoch`` and ``index`` of the next item, is the whole state: a stream set to a
    saved position goes on exactly as the saved one would have. ``epoch`` counts complete passes;
    a spent epoch rolls over when the next item is asked for."""

    def __init__(self, draw: Callable[[int], Sequence[Item]], rank: int = 0, world_size: int = 1):
        self._draw, self.rank, self.world_size = draw, rank, world_size
        self.epoch = self.index = 0
        self._drawn: Tuple[int, Sequence[Item]] = (-1, ())  # (epoch, its share): drawn once per epoch

    def _order(self) -> Sequence[Item]:
        if self._drawn[0] != self.epoch:
            self._drawn = (self.epoch, rank_share(self._draw(self.epoch), self.rank, self.world_size))
        return self._drawn[1]

    def current(self) -> Item:
        """The item at the position (the next epoch's first once this one is spent); stays there."""
        if self.index == len(self._order()):
            self.epoch, self.index = self.epoch + 1, 0
        return self._order()[self.index]

    def advance(self) -> None:
        """Move past ``current()``: apart from it for items read in pieces (a row group of documents)."""
        self.index += 1

    def next(self) -> Item:
        item = self.current()
        self.advance()
        return item

"""Training data: blocks from the packed shards (``python -m tokenizer pack``), languages drawn
with the sampler's alpha-smoothed probabilities, and BERT masking.

Languages are drawn through the shared ``sampling.LanguageMixture`` over each language's token
count (by default p_i ∝ q_i^0.3); a language's blocks come in a permutation seeded by (seed, language, epoch), of
which rank r of w takes positions r, r + w, ...: ranks never share a block, and a language that
runs out starts its next epoch (counted). The last ``heldout`` blocks of every language are kept
out of training for evaluation. The whole state is a few integers and the language generator's
state, so a resumed run reads exactly the blocks it would have read.
"""

from __future__ import annotations

from functools import partial
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from sampling import EpochStream, LanguageMixture, MixtureConfig
from tokenizer.pack import PackedData
from tokenizer.xlmr import BOS, EOS, PAD, SPECIALS

FIRST_PIECE = len(SPECIALS)  # random replacements are ordinary pieces: ids 4 .. <mask> - 1


def heldout_count(blocks: int, heldout: int) -> int:
    """Blocks of a language kept for evaluation: ``heldout``, but never more than a tenth."""
    return min(heldout, blocks // 10)


class BlockStream:
    """Batches of training blocks for one rank. ``next_batch(n)`` returns ([n, length] int64
    ids padded with ``<pad>``, the blocks' languages)."""

    def __init__(
        self,
        data: PackedData,
        mixture: MixtureConfig = MixtureConfig(),
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        heldout: int = 0,
        languages: Optional[Sequence[str]] = None,
    ):
        """``languages``: only these of DATA_DIR's (default all)."""
        if not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank {rank} of {world_size}")
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self._blocks: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        for language in selected(data, languages):
            blocks = data.manifest.languages[language].blocks
            train = blocks - heldout_count(blocks, heldout)
            if train >= world_size:
                tokens, index = data.load_blocks(language)
                self._blocks[language] = (tokens, index[:train])
        if not self._blocks:
            raise ValueError(f"{data.folder}: no language has {world_size} training blocks")
        sizes = {language: int(index["length"].sum()) for language, (_, index) in self._blocks.items()}
        self.mixture = LanguageMixture(sizes, mixture, seed, rank)
        self.probs, self.languages = self.mixture.probs, self.mixture.languages
        self._streams = {
            language: EpochStream(partial(self._permutation, language), rank, world_size) for language in self.languages
        }

    def _permutation(self, language: str, epoch: int) -> np.ndarray:
        """Every rank's order of a language's blocks in an epoch, seeded by (seed, epoch, language)."""
        count = len(self._blocks[language][1])
        return np.random.default_rng([self.seed, epoch, *language.encode()]).permutation(count)

    def _next_block(self, language: str) -> np.ndarray:
        tokens, index = self._blocks[language]
        offset, length = index[self._streams[language].next()]
        return tokens[offset : offset + length]

    def next_batch(self, batch_size: int) -> Tuple[torch.Tensor, List[str]]:
        languages = self.mixture.draw(batch_size)
        return collate([self._next_block(language) for language in languages]), languages

    @property
    def epochs(self) -> Dict[str, int]:
        """Complete passes over each language's training blocks (by this rank)."""
        return {language: stream.epoch for language, stream in self._streams.items()}

    def state_dict(self) -> Dict:
        """JSON-serializable: the language generator's state and each language's position."""
        positions = {language: [stream.epoch, stream.index] for language, stream in self._streams.items()}
        return {"rng": self.mixture.state_dict(), "positions": positions}

    def load_state_dict(self, state: Dict) -> None:
        self.mixture.load_state_dict(state["rng"])
        for language, (epoch, index) in state["positions"].items():
            if language not in self._streams:
                raise ValueError(f"the checkpoint's data has language {language}, this DATA_DIR has not")
            self._streams[language].epoch, self._streams[language].index = epoch, index


def selected(data: PackedData, languages: Optional[Sequence[str]]) -> List[str]:
    """The packed languages, or ``languages`` (each must be there), sorted."""
    packed = data.manifest.languages
    missing = sorted(set(languages or ()) - set(packed))
    if missing:
        raise ValueError(f"{data.folder} has no blocks of {', '.join(missing)} (it has {', '.join(sorted(packed))})")
    return sorted(languages or packed)


def heldout_blocks(
    data: PackedData, heldout: int, languages: Optional[Sequence[str]] = None
) -> Dict[str, List[np.ndarray]]:
    """Each language's held-out blocks (the last ones of its shard), for evaluation."""
    out = {}
    for language in selected(data, languages):
        count = heldout_count(data.manifest.languages[language].blocks, heldout)
        if count:
            tokens, index = data.load_blocks(language)
            out[language] = [tokens[offset : offset + length] for offset, length in index[-count:]]
    return out


def collate(blocks: Sequence[np.ndarray]) -> torch.Tensor:
    """[len(blocks), longest] int64 ids, shorter blocks padded with ``<pad>``."""
    batch = torch.full((len(blocks), max(len(block) for block in blocks)), PAD, dtype=torch.long)
    for row, block in enumerate(blocks):
        batch[row, : len(block)] = torch.from_numpy(block.astype(np.int64))
    return batch


def masking_generator(seed: int, *keys: int) -> torch.Generator:
    """A CPU generator seeded from (seed, *keys), e.g. (seed, step, rank, micro-batch)."""
    state = np.random.SeedSequence([seed, *keys]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


def mask_tokens(
    tokens: torch.Tensor,
    mask_id: int,
    generator: torch.Generator,
    mask_prob: float = 0.15,
    random_prob: float = 0.1,
    keep_prob: float = 0.1,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: each token but ``<s>``, ``</s>`` and ``<pad>`` is picked with ``mask_prob``;
    a picked token becomes ``<mask>`` (80%), a random ordinary piece (``random_prob``) or stays
    (``keep_prob``). Returns (inputs, picked positions); the targets are ``tokens[picked]``.
    Drawn on the CPU from ``generator``, so the same on every device."""
    cpu = tokens.cpu()
    eligible = (cpu != BOS) & (cpu != EOS) & (cpu != PAD)
    draw = torch.rand(cpu.shape, generator=generator)
    picked = eligible & (torch.rand(cpu.shape, generator=generator) < mask_prob)
    inputs = cpu.masked_fill(picked & (draw < 1 - random_prob - keep_prob), mask_id)
    replace = picked & (draw >= 1 - random_prob - keep_prob) & (draw < 1 - keep_prob)
    random_ids = torch.randint(FIRST_PIECE, mask_id, cpu.shape, generator=generator)
    inputs = torch.where(replace, random_ids, inputs)
    return inputs.to(tokens.device), picked.to(tokens.device)

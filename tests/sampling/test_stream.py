import random

from sampling.stream import EpochStream, rank_share

ITEMS = 10


def shuffled(epoch):
    """Every rank's order of ITEMS items in an epoch: another permutation each epoch."""
    return random.Random(epoch).sample(range(ITEMS), ITEMS)


def test_epochs_roll_over_when_the_next_item_is_asked_for():
    draws = []
    stream = EpochStream(lambda epoch: draws.append(epoch) or shuffled(epoch))
    first = [stream.next() for _ in range(ITEMS)]
    assert first == shuffled(0) and (stream.epoch, stream.index) == (0, ITEMS)  # spent, not yet counted
    second = [stream.next() for _ in range(ITEMS + 3)]
    assert second == shuffled(1) + shuffled(2)[:3] and stream.epoch == 2
    assert draws == [0, 1, 2]  # each epoch drawn once


def test_ranks_read_disjoint_shares_covering_each_epoch():
    for world_size in (1, 2, 3):
        for epoch in range(3):
            shares = []
            for rank in range(world_size):
                stream = EpochStream(shuffled, rank, world_size)
                stream.epoch = epoch
                shares.append([stream.next() for _ in range(len(rank_share(range(ITEMS), rank, world_size)))])
                assert stream.epoch == epoch
            assert sorted(sum(shares, [])) == list(range(ITEMS))  # disjoint and covering
            assert [share[0] for share in shares] == shuffled(epoch)[:world_size]


def test_a_stream_set_to_a_saved_position_goes_on_exactly():
    # ranks 0, 1, 2 of 3 have 4, 3, 3 items an epoch: ranks 1 and 2 are saved at an epoch's end
    for rank, read, saved in ((0, 7, (1, 3)), (1, 6, (1, 3)), (2, 3, (0, 3))):
        stream = EpochStream(shuffled, rank, 3)
        for _ in range(read):
            stream.next()
        assert (stream.epoch, stream.index) == saved
        expected = [stream.next() for _ in range(20)]
        resumed = EpochStream(shuffled, rank, 3)
        resumed.epoch, resumed.index = saved
        assert [resumed.next() for _ in range(20)] == expected
        assert (resumed.epoch, resumed.index) == (stream.epoch, stream.index)


def test_current_stays_until_advanced():
    stream = EpochStream(shuffled)
    assert stream.current() == stream.current() == shuffled(0)[0]
    stream.advance()
    assert stream.current() == shuffled(0)[1] and stream.index == 1

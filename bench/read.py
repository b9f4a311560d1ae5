"""make bench-read: the mine job's WET reader against a bare warcio loop, and its time on bad input.

1. On the benchmarks' WET input (``bench_wet``: 20,000 pages in 8 files) in three containers —
   CommonCrawl's gzip member per record, the same files gzipped as one member, and plain —
   ``ccnet_pipeline.wet.read_segment`` against a bare warcio loop (``ArchiveIterator``, the
   conversion records' content decoded; warcio refuses a file gzipped as one member, so there
   it reads Python's ``gzip`` stream), taking turns, the best of ``--rounds``.
2. Linear time on the input that hung the old reader (issue 27): a corrupt gzip member, then a
   record with a wrong Content-Length and N MiB without a newline, for N = 8, 16, 32, 64; and a
   record of N MiB over the cap, skipped; seconds and peak Python memory (tracemalloc) per N.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import sys
import time
import tracemalloc

from warcio.archiveiterator import ArchiveIterator

from bench.common import bench_wet, take_turns
from ccnet_pipeline.samples.wet_writer import raw_record
from ccnet_pipeline.wet import read_segment


def with_reader(files):
    return sum(1 for data in files for _ in read_segment(io.BytesIO(data), "bench"))


def with_warcio(files, one_member=False):
    """warcio refuses a WARC gzipped as one member: there it reads Python's gzip stream."""
    count = 0
    for data in files:
        stream = gzip.GzipFile(fileobj=io.BytesIO(data)) if one_member else io.BytesIO(data)
        for record in ArchiveIterator(stream):
            if record.rec_type == "conversion":
                record.content_stream().read().decode("utf-8")
                count += 1
    return count


def headers(length: int):
    return {
        "WARC-Type": "conversion",
        "WARC-Target-URI": "https://bench.example/",
        "WARC-Date": "2019-02-16T04:15:08Z",
        "Content-Length": str(length),
    }


def hang_input(mib: int) -> bytes:
    text = b"Title\nsome text"
    corrupt = bytearray(raw_record(headers(len(text)), text))
    corrupt[15:25] = bytes(10)
    line = b"T\n" + b"x" * (mib << 20)
    return bytes(corrupt) + gzip.compress(gzip.decompress(raw_record(headers(10), line)), compresslevel=1)


def over_the_cap(mib: int) -> bytes:
    line = b"T\n" + b"x" * (mib << 20)
    return gzip.compress(gzip.decompress(raw_record(headers(len(line)), line)), compresslevel=1)


def measure(data: bytes, cap: int):
    tracemalloc.start()
    start = time.perf_counter()
    kinds = [getattr(item, "kind", "doc") for _, item in read_segment(io.BytesIO(data), "bench", max_record_bytes=cap)]
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak, kinds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=20000)
    parser.add_argument("--segments", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", default="out/bench")
    args = parser.parse_args(argv)

    paths = bench_wet(os.path.join(args.workdir, "wet"), args.documents, args.segments)
    per_record = []
    for path in paths:
        with open(path, "rb") as stream:
            per_record.append(stream.read())
    plain = [gzip.decompress(data) for data in per_record]
    containers = {
        "gzip member per record (CommonCrawl)": per_record,
        "one gzip member": [gzip.compress(data, compresslevel=6) for data in plain],
        "plain": plain,
    }
    megabytes = sum(len(data) for data in plain) / 1e6
    print(
        f"{args.documents} pages in {len(paths)} files, {megabytes:.1f} MB of WET; best of {args.rounds}, taking turns"
    )
    print(f"{'container':40s}{'reader s':>10s}{'warcio s':>10s}{'reader / warcio':>17s}{'reader MB/s':>13s}")
    for name, files in containers.items():
        one_member = name == "one gzip member"
        assert with_reader(files) == with_warcio(files, one_member) == args.documents
        reader, warcio = (
            min(times)
            for times in take_turns(
                [lambda files=files: with_reader(files), lambda files=files, one=one_member: with_warcio(files, one)],
                args.rounds,
            )
        )
        print(f"{name:40s}{reader:10.2f}{warcio:10.2f}{reader / warcio:17.2f}{megabytes / reader:13.1f}")

    print("\nbad input, one file: seconds and peak memory of the reader (cap 1 MiB for the record over it)")
    print(f"{'MiB':>5s}{'hang input s':>14s}{'peak MiB':>10s}{'over the cap s':>16s}{'peak MiB':>10s}")
    for mib in (8, 16, 32, 64):
        hang_s, hang_peak, kinds = measure(hang_input(mib), 128 << 20)
        assert kinds == ["corrupt_gzip", "wrong_content_length"], kinds
        cap_s, cap_peak, kinds = measure(over_the_cap(mib), 1 << 20)
        assert kinds == ["record_too_large"], kinds
        print(f"{mib:5d}{hang_s:14.2f}{hang_peak / 2**20:10.1f}{cap_s:16.2f}{cap_peak / 2**20:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

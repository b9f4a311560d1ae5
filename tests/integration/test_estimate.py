"""`python -m ccnet_pipeline estimate` predicts a larger run from a sample of its files: checked
against the real run of the whole input, measured the same way."""

from pathlib import Path

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.config import MineConfig
from ccnet_pipeline.estimate import EstimateConfig, estimate, mine_sample, spread
from ccnet_pipeline.pipeline import list_segments
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from filters.dedup import DedupConfig
from lid.model import LidConfig
from toolkit.corpus import CorpusManifest
from toolkit.languages import parse_languages

FILES, SAMPLE = 6, 3


def test_spread_takes_files_from_along_the_whole_list():
    paths = [f"seg-{i:02d}" for i in range(10)]
    assert spread(paths, 3) == ["seg-01", "seg-05", "seg-08"]
    assert spread(paths, 10) == paths
    assert spread(paths[:2], 5) == paths[:2]


@pytest.fixture(scope="module")
def job(tmp_path_factory, lm_dir):
    wet = tmp_path_factory.mktemp("wet")
    generate_sample(str(wet), SampleConfig(segments=FILES, docs_per_segment=700, seed=21, bad_records=False))
    return MineConfig(
        input=(str(wet / "*.warc.wet.gz"),),
        output=str(tmp_path_factory.mktemp("whole") / "corpus"),
        lid=LidConfig(languages=parse_languages("en,de,fr,es,ru")),
        dedup=DedupConfig(memory_per_worker=64 * 1024),  # a few partitions, which scale with the input
        lm_dir=str(lm_dir),
        target_shard_size=150_000,  # several files per language and bucket
    )


def test_the_estimate_from_half_the_files_predicts_the_whole_run(job, tmp_path):
    segments = list_segments(job.input)
    predicted = estimate(job, spread(segments, SAMPLE), len(segments), EstimateConfig(SAMPLE, workdir=str(tmp_path)))
    actual = mine_sample(job, segments)
    manifest = CorpusManifest.read(job.output)

    def close(prediction, truth, within=0.25):
        assert abs(prediction - truth) <= within * truth, f"{prediction} against {truth}"

    # a run's CPU varies by 20-30% between runs on a shared 2-core machine, and the prediction
    # extrapolates the difference of two of them: ±40% (bytes, files and partitions: ±25%)
    close(predicted.core_hours * 3600, actual.cpu_seconds, within=0.4)
    close(predicted.output_bytes, actual.output_bytes)
    close(predicted.output_files, len(manifest.files))
    close(predicted.documents, actual.stats.documents_read, within=0.1)
    close(predicted.hash_partitions, actual.stats.hash_partitions)
    close(predicted.download_bytes, sum(Path(path).stat().st_size for path in segments), within=0.1)
    assert predicted.segments == FILES and len(predicted.sample) == SAMPLE


def test_the_command_takes_the_jobs_own_flags_and_prints_every_figure(job, tmp_path, capsys):
    argv = ["estimate", "--input", job.input[0], "--output", str(tmp_path / "corpus"), "--langs", "en,de"]
    argv += ["--sample-segments", "2", "--workdir", str(tmp_path / "estimate"), "--workers", "10"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"estimated from 2 of {FILES} WET files" in printed
    for figure in ("core-hours", "on 10 workers x 8 cores", "memory per worker", "dedup partitions", "shuffle"):
        assert figure in printed
    for figure in ("download", "output", "assumptions:"):
        assert figure in printed
    assert not (tmp_path / "corpus").exists()  # the job's own output is not touched


def test_a_sample_of_one_file_is_refused(job, tmp_path, capsys):
    argv = ["estimate", "--input", job.input[0], "--output", str(tmp_path / "corpus"), "--sample-segments", "1"]
    assert main(argv) == 2
    assert "sample_segments must be >= 2" in capsys.readouterr().err

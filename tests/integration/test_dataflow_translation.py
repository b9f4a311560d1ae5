"""The mine job translated for Dataflow (Runner v2) offline: ``--runner=DataflowRunner
--dry_run=True`` builds the job Dataflow would get and submits nothing. Its graph holds only
Beam's primitive transforms (no runner-specific one), every step runs in the SDK container
image given, and a dry run changes nothing in the output folder: the same command then runs
for real."""

import json

import pytest
from apache_beam.portability.api import beam_runner_api_pb2

from ccnet_pipeline.cli import main
from ccnet_pipeline.config import MineConfig
from ccnet_pipeline.pipeline import build, list_segments
from ccnet_pipeline.runner import new_pipeline
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from filters.dedup import DedupConfig
from lid.model import LidConfig
from toolkit.languages import parse_languages

IMAGE = "us-docker.pkg.dev/my-project-123/workers/xlmr-corpus-worker:0.1.0"
DATAFLOW = [
    "--runner=DataflowRunner",
    "--dry_run=True",
    "--project=my-project-123",
    "--region=us-east1",
    "--temp_location=gs://my-bucket-123/tmp",
    f"--sdk_container_image={IMAGE}",
]
PRIMITIVES = {
    "beam:transform:impulse:v1",
    "beam:transform:pardo:v1",
    "beam:transform:group_by_key:v1",
    "beam:transform:flatten:v1",
}


@pytest.fixture(scope="module")
def wet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wet")
    generate_sample(str(folder), SampleConfig(segments=2, docs_per_segment=100, sites=20, seed=4))
    return folder


@pytest.mark.parametrize("near_dedup", ["off", "minhash"])
def test_the_job_translates_for_dataflow_into_beam_primitives_in_the_image_given(near_dedup, wet, lm_dir, tmp_path):
    config = MineConfig(
        input=(str(wet / "*.warc.wet.gz"),),
        output=str(tmp_path / "corpus"),
        lid=LidConfig(languages=parse_languages("en,de,fr")),
        dedup=DedupConfig(),
        lm_dir=str(lm_dir),
        near_dedup=near_dedup,
    )
    pipeline, options = new_pipeline(DATAFLOW)
    build(pipeline, config, list_segments(config.input), options, {})
    job = pipeline.run().job  # the dry run's job, as it would be submitted
    graph = job.proto_pipeline.components
    leaves = [t for t in graph.transforms.values() if not t.subtransforms]
    assert {t.spec.urn for t in leaves} == PRIMITIVES
    environments = {t.environment_id for t in leaves if t.spec.urn == "beam:transform:pardo:v1"}
    assert len(environments) == 1
    (environment,) = [graph.environments[e] for e in environments]
    assert environment.urn == "beam:env:docker:v1"
    assert beam_runner_api_pb2.DockerPayload.FromString(environment.payload).container_image == IMAGE
    names = {t.unique_name for t in graph.transforms.values()}
    assert {"Deduplicate", "CommitSegments", "WriteShards", "WriteManifestAndStats"} <= names
    assert ("NearDedup" in names) == (near_dedup == "minhash")
    assert not (tmp_path / "corpus").exists()  # nothing ran


def test_a_dry_run_marks_nothing_done_and_the_same_command_then_runs(wet, tmp_path, capsys):
    out = tmp_path / "corpus"
    argv = ["mine", "--input", str(wet / "*.warc.wet.gz"), "--output", str(out), "--langs", "en,de,fr"]
    assert main([*argv, *DATAFLOW]) == 0
    assert capsys.readouterr().out.startswith("dry run: the job was translated and submitted nowhere")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == ["_work/run.json"]
    assert main(argv) == 0  # for real, on the default runner
    assert json.loads((out / "stats.json").read_text())["segments"] == 2
    assert (out / "_work" / "complete").exists()

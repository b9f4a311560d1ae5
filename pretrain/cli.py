"""python -m pretrain train | train-adapter | distill | distill-task | finetune | evaluate | export-hf | plot

train      --config tiny|base|large --data DATA_DIR --out RUN_DIR [--max-steps N] [--precision P] [--resume]
           (one process, or under torchrun for DDP)
train-adapter --init RUN_OR_HF_DIR --data DATA_DIR --language xx [--out RUN_DIR] [--adapter-config language|task]
           a MAD-X language adapter: MLM on one language, the encoder frozen; AdapterHub folder in RUN_DIR/adapter
distill    --teacher RUN_OR_HF_DIR --student-config mini|tiny|small|... --data DATA_DIR [--out RUN_DIR] [--resume]
           general distillation (TinyBERT): the student, a pretraining run of its own, learns the teacher's
           attention scores, hidden states and MLM predictions on the packed blocks
distill-task --teacher FINETUNED --student RUN --train FILE --dev FILE [--test FILE ...] --out DIR [--resume]
           task distillation: the student fine-tuned on the teacher's soft predictions (a fine-tuning run)
finetune   --init RUN_OR_HF_DIR --task classify|pair|tokens --train FILE --dev FILE [--test FILE ...] --out DIR
           [--adapter LANGUAGE_ADAPTER] [--resume]   (TSV with a header or JSONL; tokens: CoNLL or JSONL; the best
           dev model exported to DIR/hf, or with --adapter a MAD-X task adapter to DIR/task_adapter)
evaluate   classify --model FINETUNED --test NAME=FILE ... [--out DIR]   accuracy (tokens: entity F1) per test
           set, table + bar chart; [--language-adapter NAME=ADAPTER ...] swaps in a language adapter per test
           retrieval --model DIR --src FILE --tgt FILE [--layer N]   nearest-neighbour accuracy both ways
           sib200 --init RUN_OR_HF_DIR --sib-dir DIR --corpus CORPUS|--languages LIST [--out DIR]   fine-tune on
           SIB-200 English, zero-shot accuracy and retrieval per language (make eval)
export-hf  RUN_DIR OUT    the run's latest checkpoint as a Hugging Face XLMRobertaForMaskedLM folder
plot       RUN_DIR [--out PNG]   loss curves

Every config's flags come from its dataclass (``toolkit.cli``). Every command that trains resumes
one way (``run_dir``): ``--resume`` continues the run in ``--out`` with its saved configs and
inputs (but its ``--max-steps``, which cut only the run before), then the flags given on top.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Dict, List, Optional

from pretrain.adapters import ADAPTER_PRESETS, AdapterConfig, adapter_config
from pretrain.distill import DistillConfig
from pretrain.finetune import FINETUNE_PRESETS, FinetuneConfig, FinetuneJob, FinetuningRun
from pretrain.model import MODEL_PRESETS
from pretrain.run_dir import RunDir, resumed_fields
from pretrain.run_record import TRAIN_PRESETS, AdapterStart, PretrainingRun, TrainConfig, train_config
from pretrain.tasks import ExamplesConfig
from toolkit.cli import add_config_arguments, build_config, given, run_cli

ADAPTER_FLAGS = "adapter."  # where the adapter config's flags land in args
DISTILL_FLAGS = "distill."  # where the distillation losses' flags land


def run_arguments(parser: argparse.ArgumentParser, out_help: str, out_default: Optional[str] = None) -> None:
    """--out, --resume and --device: where a run lives, and whether it continues."""
    parser.add_argument("--out", required=out_default is None, default=out_default, help=out_help)
    parser.add_argument("--resume", action="store_true", help="continue --out from its latest checkpoint")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))


def preset_argument(parser: argparse.ArgumentParser, presets: Dict, what: str = "preset") -> None:
    parser.add_argument("--config", default="tiny", choices=sorted(presets), help=f"{what} (default tiny)")


def data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="DATA_DIR written by `python -m tokenizer pack`")


def files_arguments(parser: argparse.ArgumentParser) -> None:
    """A fine-tuning set's files."""
    parser.add_argument(
        "--train",
        required=True,
        help="TSV (header) or JSONL: text / text_a + text_b, and label; tokens: CoNLL or JSONL",
    )
    parser.add_argument(
        "--dev", required=True, help="the same format: dev accuracy after every epoch picks the best model"
    )
    parser.add_argument("--test", action="append", default=[], help="a file to score the best model on (repeatable)")


def saved_record(args, cls):
    """The one resume path: on --resume, the record of the run in --out (None before its first save)."""
    return RunDir(args.out).resumed(cls, args.resume) if args.out else None


def saved_config(record, name: str) -> Dict:
    """A saved record's config ``name`` as a layer under the flags (``resumed_fields``)."""
    return resumed_fields(getattr(record, name) if record is not None else None)


def print_final(result: Dict, what: str, suffix: str = "") -> None:
    if "train" in result:
        print(f"final {what} loss {result['train']['loss']:.4f}{suffix}")


# --- train ---------------------------------------------------------------------------------


def _train_parser(sub) -> None:
    parser = sub.add_parser("train", help="pretrain an encoder on packed blocks")
    preset_argument(parser, TRAIN_PRESETS)
    data_argument(parser)
    parser.add_argument("--init-from-hf", default=None, help="start from a Hugging Face XLM-R folder")
    run_arguments(parser, "RUN_DIR: checkpoints, metrics.csv, tensorboard/, config.json")
    add_config_arguments(parser, TrainConfig)


def _train(args) -> int:
    from pretrain.train import train

    saved, flags = saved_record(args, PretrainingRun), given(args)
    model = saved.train.model if saved else flags.get("model", args.config)
    # A student's shape (mini, small) has no schedule of its own: the --config preset's.
    preset = model if model in TRAIN_PRESETS else args.config
    config = train_config(preset, saved_config(saved, "train"), flags)
    init_from_hf = args.init_from_hf or (saved.init_from_hf if saved else None)
    print_final(train(config, args.data, args.out, args.resume, init_from_hf, args.device), "training")
    return 0


# --- train-adapter -------------------------------------------------------------------------


def _train_adapter_parser(sub) -> None:
    parser = sub.add_parser("train-adapter", help="train a MAD-X language adapter (MLM, the encoder frozen)")
    parser.add_argument("--init", help="the frozen encoder: a pretraining run, a checkpoint or an HF folder")
    data_argument(parser)
    parser.add_argument("--language", help="the language of DATA_DIR to train on")
    parser.add_argument("--name", default=None, help="the adapter's name (default: the language)")
    parser.add_argument(
        "--adapter-config",
        default="language",
        choices=sorted(ADAPTER_PRESETS),
        help="adapter preset (default language)",
    )
    preset_argument(parser, TRAIN_PRESETS, "training preset")
    run_arguments(parser, "RUN_DIR (default out/adapters/LANGUAGE); the adapter in RUN_DIR/adapter", "")
    add_config_arguments(parser, TrainConfig)
    add_config_arguments(parser, AdapterConfig, prefix=ADAPTER_FLAGS)


def _train_adapter(args) -> int:
    from pretrain.adapter_train import train_adapter

    args.out = args.out or (os.path.join("out", "adapters", args.language) if args.language else "")
    saved = saved_record(args, PretrainingRun)
    start = saved.adapter if saved else None
    init, language = args.init or (start and start.init), args.language or (start and start.language)
    if not init or not language or not args.out:
        raise ValueError("give --init and --language (or --resume an adapter run with --out)")
    config = train_config(args.config, saved_config(saved, "train"), given(args))
    saved_adapter = dataclasses.asdict(start.config) if start else {}
    adapter = adapter_config(args.adapter_config, saved_adapter, given(args, ADAPTER_FLAGS))
    name = args.name or (start.name if start else language)
    result = train_adapter(
        config, AdapterStart(init, language, name, adapter), args.data, args.out, args.resume, args.device
    )
    print_final(result, "training")
    return 0


# --- distill -------------------------------------------------------------------------------


def _distill_parser(sub) -> None:
    parser = sub.add_parser("distill", help="general distillation of an encoder into a smaller student (TinyBERT)")
    parser.add_argument("--teacher", help="a pretraining run, a checkpoint or an HF folder")
    data_argument(parser)
    parser.add_argument(
        "--student-config",
        dest="config.model",
        default=argparse.SUPPRESS,
        choices=sorted(MODEL_PRESETS),
        help="the student's shape (a model preset; the teacher's vocabulary and heads); mini for tiny, small for base",
    )
    preset_argument(parser, TRAIN_PRESETS, "training preset")
    run_arguments(parser, "RUN_DIR (default out/student)", "out/student")
    add_config_arguments(parser, TrainConfig)
    add_config_arguments(parser, DistillConfig, prefix=DISTILL_FLAGS)


def _distill(args) -> int:
    from pretrain.distill_train import distill

    saved, flags = saved_record(args, PretrainingRun), given(args)
    start = saved.distill if saved else None
    teacher = args.teacher or (start.teacher if start else None)
    if not teacher or not (saved or "model" in flags):
        raise ValueError("give --teacher and --student-config (or --resume a distillation run with --out)")
    config = train_config(args.config, saved_config(saved, "train"), flags)  # model: the student's
    losses = build_config(DistillConfig, resumed_fields(start.config if start else None), given(args, DISTILL_FLAGS))
    result = distill(config, losses, teacher, args.data, args.out, args.resume, args.device)
    print_final(result, "distillation", f"; the student is {args.out}")
    return 0


# --- finetune and distill-task ---------------------------------------------------------------


def _finetune_parser(sub) -> None:
    parser = sub.add_parser("finetune", help="fine-tune a classification head (and the encoder) on labelled text")
    preset_argument(parser, FINETUNE_PRESETS)
    parser.add_argument(
        "--init", required=True, help="a pretraining run, a checkpoint, a fine-tuning run or an HF folder"
    )
    files_arguments(parser)
    parser.add_argument(
        "--adapter",
        default=None,
        help="MAD-X: a language adapter (folder or train-adapter run) kept fixed; a task adapter and the head train",
    )
    run_arguments(parser, "DIR: checkpoints, best/, hf/, metrics.csv, tensorboard/, results.json")
    add_config_arguments(parser, FinetuneConfig)


def _distill_task_parser(sub) -> None:
    parser = sub.add_parser("distill-task", help="task distillation: a student learns a fine-tuned teacher")
    preset_argument(parser, FINETUNE_PRESETS)
    parser.add_argument("--teacher", help="the fine-tuned teacher: a fine-tuning run or an HF classifier folder")
    parser.add_argument("--student", help="the student: a distill run (or any run, checkpoint or HF folder)")
    files_arguments(parser)
    run_arguments(parser, "DIR: a fine-tuning run (best/, hf/, results.json, ...)")
    add_config_arguments(parser, FinetuneConfig)
    add_config_arguments(parser, DistillConfig, prefix=DISTILL_FLAGS)


def _finetune(args) -> int:
    """finetune and distill-task: a fine-tuning run, its inputs from the flags or the saved run."""
    from pretrain.finetune import finetune, finetune_config

    saved = saved_record(args, FinetuningRun)
    config = finetune_config(args.config, saved_config(saved, "finetune"), given(args))
    if args.command == "finetune":
        adapter = args.adapter or (saved.language_adapter if saved else None)
        job = FinetuneJob(args.init, args.train, args.dev, tuple(args.test), language_adapter=adapter)
    else:
        teacher, student = args.teacher or (saved and saved.teacher), args.student or (saved and saved.init)
        if not teacher or not student:
            raise ValueError("give --teacher and --student (or --resume a distill-task run with --out)")
        losses = build_config(DistillConfig, saved_config(saved, "distill"), given(args, DISTILL_FLAGS))
        job = FinetuneJob(student, args.train, args.dev, tuple(args.test), teacher=teacher, distill=losses)
    finetune(config, job, args.out, args.resume, args.device)
    return 0


# --- evaluate ------------------------------------------------------------------------------


def _evaluate_parser(sub) -> None:
    evaluate = sub.add_parser("evaluate", help="score a model: fine-tuned classification, or retrieval")
    kinds = evaluate.add_subparsers(dest="evaluation", required=True)
    classify = kinds.add_parser("classify", help="a fine-tuned classifier's accuracy on test sets (zero-shot transfer)")
    classify.add_argument("--model", required=True, help="a fine-tuning run or an HF classifier folder")
    classify.add_argument(
        "--test", action="append", required=True, help="NAME=FILE (e.g. sw=swh_Latn/test.tsv), repeatable"
    )
    classify.add_argument("--out", default="out/eval", help="folder for scores.csv and scores.png")
    classify.add_argument(
        "--language-adapter",
        action="append",
        default=[],
        help="NAME=ADAPTER: score test NAME with this language adapter under the task adapter (MAD-X), repeatable",
    )
    add_config_arguments(classify, ExamplesConfig)  # --task: by default the classifier's head's
    sib = kinds.add_parser(
        "sib200", help="fine-tune on SIB-200 English, zero-shot accuracy and retrieval per corpus language"
    )
    sib.add_argument("--init", required=True, help="a pretraining run, a checkpoint or an HF folder")
    sib.add_argument("--sib-dir", required=True, help="SIB-200's data/annotated: one folder per language")
    languages = sib.add_mutually_exclusive_group(required=True)
    languages.add_argument("--corpus", help="a corpus folder: its manifest's languages")
    languages.add_argument("--languages", help="XLM-R codes, comma separated (100: all of XLM-R's)")
    sib.add_argument("--source", default="eng_Latn", help="the SIB-200 folder to fine-tune on")
    sib.add_argument(
        "--layer",
        type=int,
        default=None,
        help="retrieval layer (default: a sentence encoder's last, else two thirds up)",
    )
    sib.add_argument("--out", default="out/eval", help="finetune/, scores.csv, scores.png, retrieval.csv")
    preset_argument(sib, FINETUNE_PRESETS, "fine-tuning preset")
    sib.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    add_config_arguments(sib, FinetuneConfig)
    retrieval = kinds.add_parser("retrieval", help="nearest-neighbour retrieval of line-aligned sentences")
    retrieval.add_argument("--model", required=True, help="a run, checkpoint, fine-tuning run or HF folder")
    retrieval.add_argument("--src", required=True, help="one sentence a line")
    retrieval.add_argument("--tgt", required=True, help="their translations, line by line")
    retrieval.add_argument(
        "--layer",
        default=None,
        help="hidden states of this layer (0: embeddings), or all: every layer's score in one pass"
        " (default: the last for a sentence encoder, two thirds up for an MLM encoder, as XTREME)",
    )


def _evaluate(args) -> int:
    from pretrain import evaluate
    from pretrain.finetune import load_classifier
    from pretrain.hub import from_pretrained
    from pretrain.model import head_kind
    from pretrain.tasks import HEAD, metric_of

    if args.evaluation == "sib200":
        return _sib200(args)
    if args.evaluation == "retrieval":
        hub = from_pretrained(args.model)
        if args.layer is not None and args.layer != "all" and not args.layer.isdigit():
            raise ValueError(f"--layer {args.layer!r}: give a layer number (0: the embeddings) or all")
        layers = (
            None
            if args.layer is None
            else range(hub.model.config.layers + 1)
            if args.layer == "all"
            else [int(args.layer)]
        )
        for layer, forward, backward in evaluate.retrieval(hub, args.src, args.tgt, layers):
            print(
                f"retrieval src->tgt {forward:.3f} tgt->src {backward:.3f}"
                + (f" (layer {layer})" if args.layer == "all" else "")
            )
        return 0
    tests, adapters = named_paths(args.test, "--test"), named_paths(args.language_adapter, "--language-adapter")
    hub = load_classifier(args.model)
    heads = hub.model.classification_heads
    task = "tokens" if HEAD in heads and head_kind(heads[HEAD]) == "tokens" else "classify"
    config = build_config(FinetuneConfig, {"task": task}, given(args))
    scores = evaluate.classification_scores(hub, args.model, tests, config, adapters)
    print(evaluate.write_scores(scores, args.out, metric_of(config.task)))
    print(f"wrote {os.path.join(args.out, 'scores.csv')} and scores.png")
    return 0


def _sib200(args) -> int:
    from pretrain.finetune import finetune_config
    from pretrain.sib200 import COLUMNS, sib200, table
    from toolkit.corpus import CorpusManifest
    from toolkit.languages import parse_languages

    languages = list(CorpusManifest.read(args.corpus).languages) if args.corpus else parse_languages(args.languages)
    config = finetune_config(args.config, COLUMNS, given(args))
    if config.task != "classify":
        raise ValueError("SIB-200 is a classify task")
    result = sib200(args.init, args.sib_dir, languages, args.out, config, args.source, args.layer, args.device)
    print(table(result, args.source))
    print(f"wrote {args.out}: scores.csv, scores.png, retrieval.csv, the classifier in finetune/hf")
    return 0


def named_paths(specs: List[str], option: str) -> Dict[str, str]:
    """NAME=PATH options as a dict."""
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"{option} {spec!r}: give NAME=PATH")
        out[name] = path
    return out


# --- export-hf and plot --------------------------------------------------------------------


def _export_hf(args) -> int:
    from pretrain.export import export_hf
    from pretrain.hub import load_run

    model_cfg, state, sp_model = load_run(args.run_dir)
    export_hf(state, model_cfg, sp_model, args.out)
    print(f"wrote {args.out} (XLMRobertaForMaskedLM, {model_cfg.layers} layers, vocabulary {model_cfg.vocab_size})")
    return 0


def _plot(args) -> int:
    from pretrain.plot import plot_run

    out = args.out or os.path.join(args.run_dir, "loss.png")
    curves = plot_run(args.run_dir, out)
    print(f"wrote {out}: {', '.join(f'{name} ({len(points)} points)' for name, points in sorted(curves.items()))}")
    return 0


COMMANDS = {
    "train": _train,
    "train-adapter": _train_adapter,
    "distill": _distill,
    "distill-task": _finetune,
    "finetune": _finetune,
    "evaluate": _evaluate,
    "export-hf": _export_hf,
    "plot": _plot,
}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pretrain", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _train_adapter_parser(sub)
    _distill_parser(sub)
    _distill_task_parser(sub)
    _finetune_parser(sub)
    _evaluate_parser(sub)
    export = sub.add_parser("export-hf", help="write a Hugging Face XLMRobertaForMaskedLM folder")
    export.add_argument("run_dir")
    export.add_argument("out")
    plot = sub.add_parser("plot", help="loss curves of a run as PNG")
    plot.add_argument("run_dir")
    plot.add_argument("--out", default=None, help="PNG path (default RUN_DIR/loss.png)")
    return run_cli(lambda args: COMMANDS[args.command](args), parser, argv)

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
"""

from __future__ import annotations

import argparse
import os
from typing import Dict, List, Optional

from pretrain.train import CONFIG_FILE, TRAIN_PRESETS, TrainConfig, train, train_config
from toolkit import storage
from toolkit.cli import add_config_arguments, build_config, given, run_cli

ADAPTER_FLAGS = "adapter."  # where the adapter config's flags land in args
DISTILL_FLAGS = "distill."  # where the distillation losses' flags land


def resume_and_device(parser: argparse.ArgumentParser, out: str) -> None:
    parser.add_argument("--resume", action="store_true", help=f"continue {out} from its latest checkpoint")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))


def _train_parser(sub) -> argparse.ArgumentParser:
    parser = sub.add_parser("train", help="pretrain an encoder on packed blocks")
    parser.add_argument("--config", default="tiny", choices=sorted(TRAIN_PRESETS), help="preset (default tiny)")
    parser.add_argument("--data", required=True, help="DATA_DIR written by `python -m tokenizer pack`")
    parser.add_argument("--out", required=True, help="RUN_DIR: checkpoints, metrics.csv, tensorboard/, config.json")
    parser.add_argument("--init-from-hf", default=None, help="start from a Hugging Face XLM-R folder")
    resume_and_device(parser, "RUN_DIR")
    add_config_arguments(parser, TrainConfig)
    return parser


def _train_adapter_parser(sub) -> None:
    from pretrain.adapters import ADAPTER_PRESETS, AdapterConfig

    parser = sub.add_parser("train-adapter", help="train a MAD-X language adapter (MLM, the encoder frozen)")
    parser.add_argument("--init", help="the frozen encoder: a pretraining run, a checkpoint or an HF folder")
    parser.add_argument("--data", required=True, help="DATA_DIR written by `python -m tokenizer pack`")
    parser.add_argument("--language", help="the language of DATA_DIR to train on")
    parser.add_argument("--name", default=None, help="the adapter's name (default: the language)")
    parser.add_argument(
        "--out", default=None, help="RUN_DIR (default out/adapters/LANGUAGE); the adapter in RUN_DIR/adapter"
    )
    parser.add_argument(
        "--adapter-config",
        default="language",
        choices=sorted(ADAPTER_PRESETS),
        help="adapter preset (default language)",
    )
    parser.add_argument(
        "--config", default="tiny", choices=sorted(TRAIN_PRESETS), help="training preset (default tiny)"
    )
    resume_and_device(parser, "RUN_DIR")
    add_config_arguments(parser, TrainConfig)
    add_config_arguments(parser, AdapterConfig, prefix=ADAPTER_FLAGS)


def _train_adapter(args) -> int:
    """The presets, then on --resume the run's saved configs and inputs (but its --max-steps, which
    cut only the run before), then the flags given."""
    from pretrain.adapter_train import train_adapter
    from pretrain.adapters import adapter_config

    out = args.out or (os.path.join("out", "adapters", args.language) if args.language else None)
    saved = saved_run(out, args.resume)
    about = saved.get("adapter", {})
    init, language = args.init or about.get("init"), args.language or about.get("language")
    if not init or not language or not out:
        raise ValueError("give --init and --language (or --resume an adapter run with --out)")
    config = train_config(args.config, without_max_steps(saved.get("train", {})), given(args))
    adapter = adapter_config(args.adapter_config, about.get("config", {}), given(args, ADAPTER_FLAGS))
    name = args.name or about.get("name")
    result = train_adapter(config, adapter, init, args.data, language, out, name, args.resume, args.device)
    if "train" in result:
        print(f"final training loss {result['train']['loss']:.4f}")
    return 0


def _distill_parser(sub) -> None:
    from pretrain.distill import DistillConfig
    from pretrain.model import MODEL_PRESETS

    parser = sub.add_parser("distill", help="general distillation of an encoder into a smaller student (TinyBERT)")
    parser.add_argument("--teacher", help="a pretraining run, a checkpoint or an HF folder")
    parser.add_argument("--data", required=True, help="DATA_DIR written by `python -m tokenizer pack`")
    parser.add_argument(
        "--student-config",
        dest="config.model",
        default=argparse.SUPPRESS,
        choices=sorted(MODEL_PRESETS),
        help="the student's shape (a model preset; the teacher's vocabulary and heads); mini for tiny, small for base",
    )
    parser.add_argument("--out", default="out/student", help="RUN_DIR (default out/student)")
    parser.add_argument(
        "--config", default="tiny", choices=sorted(TRAIN_PRESETS), help="training preset (default tiny)"
    )
    resume_and_device(parser, "RUN_DIR")
    add_config_arguments(parser, TrainConfig)
    add_config_arguments(parser, DistillConfig, prefix=DISTILL_FLAGS)


def _distill(args) -> int:
    """The presets, then on --resume the run's saved configs and teacher (but its --max-steps),
    then the flags given."""
    from pretrain.distill import DistillConfig
    from pretrain.distill_train import distill

    saved = saved_run(args.out, args.resume)
    about = saved.get("distill", {})
    teacher = args.teacher or about.get("teacher")
    flags = given(args)
    if not teacher or not (saved or "model" in flags):
        raise ValueError("give --teacher and --student-config (or --resume a distillation run with --out)")
    config = train_config(args.config, without_max_steps(saved.get("train", {})), flags)  # model: the student's
    losses = build_config(DistillConfig, about.get("config", {}), given(args, DISTILL_FLAGS))
    result = distill(config, losses, teacher, args.data, args.out, args.resume, args.device)
    if "train" in result:
        print(f"final distillation loss {result['train']['loss']:.4f}; the student is {args.out}")
    return 0


def _distill_task_parser(sub) -> None:
    from pretrain.distill import DistillConfig
    from pretrain.finetune import FINETUNE_PRESETS, FinetuneConfig

    parser = sub.add_parser("distill-task", help="task distillation: a student learns a fine-tuned teacher")
    parser.add_argument("--teacher", help="the fine-tuned teacher: a fine-tuning run or an HF classifier folder")
    parser.add_argument("--student", help="the student: a distill run (or any run, checkpoint or HF folder)")
    parser.add_argument("--train", required=True, help="the fine-tuning set's training file (finetune's formats)")
    parser.add_argument("--dev", required=True, help="dev accuracy after every epoch picks the best student")
    parser.add_argument("--test", action="append", default=[], help="a file to score the best student on (repeatable)")
    parser.add_argument("--out", required=True, help="DIR: a fine-tuning run (best/, hf/, results.json, ...)")
    parser.add_argument("--config", default="tiny", choices=sorted(FINETUNE_PRESETS), help="preset (default tiny)")
    resume_and_device(parser, "DIR")
    add_config_arguments(parser, FinetuneConfig)
    add_config_arguments(parser, DistillConfig, prefix=DISTILL_FLAGS)


def _distill_task(args) -> int:
    from pretrain.distill import DistillConfig
    from pretrain.finetune import finetune, finetune_config

    run = saved_run(args.out, args.resume)
    teacher, student = args.teacher or run.get("teacher"), args.student or run.get("init")
    if not teacher or not student:
        raise ValueError("give --teacher and --student (or --resume a distill-task run with --out)")
    config = finetune_config(args.config, without_max_steps(run.get("finetune", {})), given(args))
    losses = build_config(DistillConfig, run.get("distill", {}), given(args, DISTILL_FLAGS))
    finetune(
        config, student, args.train, args.dev, args.test, args.out, args.resume, args.device, None, teacher, losses
    )
    return 0


def _finetune_parser(sub) -> None:
    from pretrain.finetune import FINETUNE_PRESETS, FinetuneConfig

    parser = sub.add_parser("finetune", help="fine-tune a classification head (and the encoder) on labelled text")
    parser.add_argument("--config", default="tiny", choices=sorted(FINETUNE_PRESETS), help="preset (default tiny)")
    parser.add_argument(
        "--init", required=True, help="a pretraining run, a checkpoint, a fine-tuning run or an HF folder"
    )
    parser.add_argument(
        "--train",
        required=True,
        help="TSV (header) or JSONL: text / text_a + text_b, and label; tokens: CoNLL or JSONL",
    )
    parser.add_argument(
        "--dev", required=True, help="the same format: dev accuracy after every epoch picks the best model"
    )
    parser.add_argument("--test", action="append", default=[], help="a file to score the best model on (repeatable)")
    parser.add_argument(
        "--out", required=True, help="DIR: checkpoints, best/, hf/, metrics.csv, tensorboard/, results.json"
    )
    parser.add_argument(
        "--adapter",
        default=None,
        help="MAD-X: a language adapter (folder or train-adapter run) kept fixed; a task adapter and the head train",
    )
    resume_and_device(parser, "DIR")
    add_config_arguments(parser, FinetuneConfig)


def _finetune(args) -> int:
    """Preset, then on --resume the run's saved config (but its --max-steps, which cut only the
    run before), then the flags given."""
    from pretrain.finetune import finetune, finetune_config

    run = saved_run(args.out, args.resume)
    config = finetune_config(args.config, without_max_steps(run.get("finetune", {})), given(args))
    adapter = args.adapter or run.get("language_adapter")
    finetune(config, args.init, args.train, args.dev, args.test, args.out, args.resume, args.device, adapter)
    return 0


def _evaluate_parser(sub) -> None:
    from pretrain.finetune import FINETUNE_PRESETS, TASKS, FinetuneConfig

    evaluate = sub.add_parser("evaluate", help="score a model: fine-tuned classification, or retrieval")
    kinds = evaluate.add_subparsers(dest="evaluation", required=True)
    classify = kinds.add_parser("classify", help="a fine-tuned classifier's accuracy on test sets (zero-shot transfer)")
    classify.add_argument("--model", required=True, help="a fine-tuning run or an HF classifier folder")
    classify.add_argument(
        "--test", action="append", required=True, help="NAME=FILE (e.g. sw=swh_Latn/test.tsv), repeatable"
    )
    classify.add_argument(
        "--task", default=None, choices=TASKS, help="default: tokens for a token classifier, else classify"
    )
    classify.add_argument("--text-column", default="text")
    classify.add_argument("--label-column", default="label")
    classify.add_argument("--tokens-column", default="tokens", help="tokens task, JSONL: the words")
    classify.add_argument("--tags-column", default="tags", help="tokens task, JSONL: their tags")
    classify.add_argument("--out", default="out/eval", help="folder for scores.csv and scores.png")
    classify.add_argument(
        "--language-adapter",
        action="append",
        default=[],
        help="NAME=ADAPTER: score test NAME with this language adapter under the task adapter (MAD-X), repeatable",
    )
    sib = kinds.add_parser(
        "sib200", help="fine-tune on SIB-200 English, zero-shot accuracy and retrieval per corpus language"
    )
    sib.add_argument("--init", required=True, help="a pretraining run, a checkpoint or an HF folder")
    sib.add_argument("--sib-dir", required=True, help="SIB-200's data/annotated: one folder per language")
    languages = sib.add_mutually_exclusive_group(required=True)
    languages.add_argument("--corpus", help="a corpus folder: its manifest's languages")
    languages.add_argument("--languages", help="XLM-R codes, comma separated (100: all of XLM-R's)")
    sib.add_argument("--source", default="eng_Latn", help="the SIB-200 folder to fine-tune on")
    sib.add_argument("--layer", type=int, default=None, help="retrieval layer (default: two thirds up)")
    sib.add_argument("--out", default="out/eval", help="finetune/, scores.csv, scores.png, retrieval.csv")
    sib.add_argument("--config", default="tiny", choices=sorted(FINETUNE_PRESETS), help="fine-tuning preset")
    sib.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    add_config_arguments(sib, FinetuneConfig)
    retrieval = kinds.add_parser("retrieval", help="nearest-neighbour retrieval of line-aligned sentences")
    retrieval.add_argument("--model", required=True, help="a run, checkpoint, fine-tuning run or HF folder")
    retrieval.add_argument("--src", required=True, help="one sentence a line")
    retrieval.add_argument("--tgt", required=True, help="their translations, line by line")
    retrieval.add_argument(
        "--layer", type=int, default=None, help="hidden states of this layer (0: embeddings; default 2/3 up)"
    )


def _evaluate(args) -> int:
    from pretrain import evaluate
    from pretrain.finetune import HEAD, FinetuneConfig, load_classifier, metric_of
    from pretrain.hub import from_pretrained
    from pretrain.model import head_kind

    if args.evaluation == "sib200":
        return _sib200(args)
    if args.evaluation == "retrieval":
        hub = from_pretrained(args.model)
        forward, backward = evaluate.retrieval(hub, args.src, args.tgt, args.layer)
        print(f"retrieval src->tgt {forward:.3f} tgt->src {backward:.3f}")
        return 0
    tests, adapters = named_paths(args.test, "--test"), named_paths(args.language_adapter, "--language-adapter")
    hub = load_classifier(args.model)
    heads = hub.model.classification_heads
    task = args.task or ("tokens" if HEAD in heads and head_kind(heads[HEAD]) == "tokens" else "classify")
    columns = ("text_column", "label_column", "tokens_column", "tags_column")
    config = FinetuneConfig(task=task, **{column: getattr(args, column) for column in columns})
    scores = evaluate.classification_scores(hub, args.model, tests, config, adapters)
    print(evaluate.write_scores(scores, args.out, metric_of(task)))
    print(f"wrote {os.path.join(args.out, 'scores.csv')} and scores.png")
    return 0


def saved_run(out: Optional[str], resume: bool) -> Dict:
    """On --resume, the config.json of the run in ``out`` (empty when there is none yet)."""
    config_file = os.path.join(out, CONFIG_FILE) if out else ""
    return storage.read_json(config_file) if resume and os.path.exists(config_file) else {}


def without_max_steps(saved: Dict) -> Dict:
    """A resumed run's saved config, but its --max-steps: that cut only the run before."""
    return {name: value for name, value in saved.items() if name != "max_steps"}


def named_paths(specs: List[str], option: str) -> Dict[str, str]:
    """NAME=PATH options as a dict."""
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"{option} {spec!r}: give NAME=PATH")
        out[name] = path
    return out


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
    return run_cli(_run, parser, argv)


def _sib200(args) -> int:
    from lid.languages import parse_languages
    from pretrain.finetune import finetune_config
    from pretrain.sib200 import COLUMNS, sib200, table
    from toolkit.corpus import CorpusManifest

    languages = list(CorpusManifest.read(args.corpus).languages) if args.corpus else parse_languages(args.languages)
    config = finetune_config(args.config, COLUMNS, given(args))
    if config.task != "classify":
        raise ValueError("SIB-200 is a classify task")
    result = sib200(args.init, args.sib_dir, languages, args.out, config, args.source, args.layer, args.device)
    print(table(result, args.source))
    print(f"wrote {args.out}: scores.csv, scores.png, retrieval.csv, the classifier in finetune/hf")
    return 0


def _run(args) -> int:
    if args.command == "train":
        return _train(args)
    if args.command == "train-adapter":
        return _train_adapter(args)
    if args.command == "distill":
        return _distill(args)
    if args.command == "distill-task":
        return _distill_task(args)
    if args.command == "finetune":
        return _finetune(args)
    if args.command == "evaluate":
        return _evaluate(args)
    if args.command == "export-hf":
        from pretrain.export import export_hf
        from pretrain.hub import load_run

        model_cfg, state, sp_model = load_run(args.run_dir)
        export_hf(state, model_cfg, sp_model, args.out)
        print(f"wrote {args.out} (XLMRobertaForMaskedLM, {model_cfg.layers} layers, vocabulary {model_cfg.vocab_size})")
        return 0
    from pretrain.plot import plot_run

    out = args.out or os.path.join(args.run_dir, "loss.png")
    curves = plot_run(args.run_dir, out)
    print(f"wrote {out}: {', '.join(f'{name} ({len(points)} points)' for name, points in sorted(curves.items()))}")
    return 0


def _train(args) -> int:
    """Preset, then on --resume the run's saved config, then the flags given."""
    run = saved_run(args.out, args.resume)
    saved, init_from_hf = run.get("train", {}), args.init_from_hf or run.get("init_from_hf")
    flags = given(args)
    model = saved.get("model", flags.get("model", args.config))
    # A student's shape (mini, small) has no schedule of its own: the --config preset's.
    preset = model if model in TRAIN_PRESETS else args.config
    config = train_config(preset, saved, flags)
    result = train(config, args.data, args.out, resume=args.resume, init_from_hf=init_from_hf, device=args.device)
    if "train" in result:
        print(f"final training loss {result['train']['loss']:.4f}")
    return 0

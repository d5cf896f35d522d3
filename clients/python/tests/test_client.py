"""The typed client against a live `treenav serve`."""

from __future__ import annotations

import pytest

from treenav_client import Passage, Retrieval, TreenavClient, TreenavError

from conftest import TOKEN

QUESTION = "Where did Tesla work after leaving Edison's company?"


def test_retrieve_returns_typed_passages(server: str) -> None:
    found = TreenavClient(server).retrieve("sample", QUESTION, top=5)
    assert isinstance(found, Retrieval)
    assert found.tree == "sample"
    assert len(found.passages) == 5
    assert all(isinstance(p, Passage) for p in found.passages)
    assert found.passages[0].document_id == "Nikola_Tesla"
    assert found.usage.calls > 0
    assert found.trace is None
    with_trace = TreenavClient(server).retrieve("sample", QUESTION, top=3, trace=True, strategy="best-first", judge_budget=40)
    assert with_trace.trace is not None and with_trace.trace["strategy"] == "best-first"


def test_every_navigator_setting_is_listed_and_passed_by_name(server: str) -> None:
    client = TreenavClient(server)
    settings = client.settings()
    # The navigator's list, as the server reads it: names, help, ranges.
    for name in ("top", "strategy", "judge_budget", "explore_budget", "always_judge", "budgets"):
        assert settings[name]["description"], name
    assert settings["top"]["minimum"] == 1 and settings["explore_budget"]["default"] == 300
    assert "keep_evidence" not in settings and "query" not in settings
    # A setting with no keyword of its own goes by its name.
    found = client.retrieve("sample", QUESTION, top=3, trace=True, explore_budget=50, always_judge=True)
    assert found.trace is not None and found.trace["explore_budget"] == 50
    with pytest.raises(TreenavError) as e:
        client.retrieve("sample", QUESTION, explore_budget=-1)
    assert e.value.status == 400 and e.value.field == "explore_budget"
    with pytest.raises(TreenavError) as e:
        client.retrieve("sample", QUESTION, colour="red")
    assert e.value.status == 400 and e.value.field == "colour"


def test_score_is_one_non_increasing_scale_and_top_is_k(server: str) -> None:
    client = TreenavClient(server)
    for strategy in ("levels", "best-first"):
        found = client.retrieve("sample", QUESTION, top=12, strategy=strategy)
        scores = [p.score for p in found.passages]
        assert len(scores) == 12 and not found.exhausted, strategy
        assert scores == sorted(scores, reverse=True), (strategy, scores)
        assert all(0.0 < s < 1.0 for s in scores), strategy
    # More than the sample holds: every passage, and said so.
    found = client.retrieve("sample", QUESTION, top=1000, strategy="best-first")
    assert found.exhausted and 0 < len(found.passages) < 1000


def test_prune_trees_health_ready(server: str) -> None:
    client = TreenavClient(server)
    kept = client.prune(
        "Where did Tesla work?",
        ["Tesla worked for Edison.", {"id": "b", "text": "Bananas are yellow."}],
        strategy="top-n",
        n=1,
    )
    assert kept.strategy == "top-n"
    assert [c.text for c in kept.kept] == ["Tesla worked for Edison."]
    trees = client.trees()
    # `scratch` is the update test's: its counts change.
    assert [(t.name, t.documents, t.passages) for t in trees if t.name != "scratch"] == [
        ("notes", 40, 40),
        ("sample", 48, 96),
    ]
    assert client.health()
    assert client.ready()["ready"] is True


def test_errors_carry_status_code_and_field(server: str) -> None:
    client = TreenavClient(server)
    with pytest.raises(TreenavError) as e:
        client.retrieve("nope", QUESTION)
    assert (e.value.status, e.value.code, e.value.field) == (404, "not_found", "tree")
    with pytest.raises(TreenavError) as e:
        client.retrieve("sample", QUESTION, top=0)
    assert (e.value.status, e.value.field) == (400, "top")
    assert not e.value.retryable
    with pytest.raises(TreenavError) as e:
        TreenavClient("http://127.0.0.1:9", timeout=2).trees()
    assert e.value.status == 0 and e.value.retryable
    with pytest.raises(ValueError):
        TreenavClient("127.0.0.1:8080")


def test_bearer_token(guarded_server: str) -> None:
    with pytest.raises(TreenavError) as e:
        TreenavClient(guarded_server, token="wrong-token-0123456789").trees()
    assert e.value.status == 401
    client = TreenavClient(guarded_server, token=TOKEN)
    assert client.trees()[0].name == "sample"
    assert TOKEN not in repr(client)

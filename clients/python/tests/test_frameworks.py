"""The LangChain and LlamaIndex retrievers, with the real frameworks."""

from __future__ import annotations

import pytest

from conftest import TOKEN

QUESTION = "Where did Tesla work after leaving Edison's company?"


def test_langchain_retriever_returns_documents(server: str, guarded_server: str) -> None:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from treenav_client.langchain import TreenavRetriever

    retriever = TreenavRetriever(base_url=server, tree="sample", top=4)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUESTION)
    assert len(docs) == 4
    assert all(isinstance(d, Document) for d in docs)
    first = docs[0]
    assert first.metadata["treenav_document_id"] == "Nikola_Tesla"
    assert first.metadata["treenav_rank"] == 1 and first.metadata["treenav_tree"] == "sample"
    assert 0.0 <= first.metadata["treenav_score"] <= 1.0
    assert first.id == first.metadata["treenav_id"]
    guarded = TreenavRetriever(base_url=guarded_server, tree="sample", top=2, token=TOKEN)
    assert len(guarded.invoke(QUESTION)) == 2
    assert TOKEN not in repr(guarded)


def test_langchain_retriever_async(server: str) -> None:
    import asyncio

    from treenav_client.langchain import TreenavRetriever

    retriever = TreenavRetriever(base_url=server, tree="sample", top=3)
    docs = asyncio.run(retriever.ainvoke(QUESTION))
    assert [d.metadata["treenav_rank"] for d in docs] == [1, 2, 3]


def test_llama_index_retriever_returns_scored_nodes(server: str) -> None:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore

    from treenav_client.llama_index import TreenavLlamaRetriever

    retriever = TreenavLlamaRetriever("sample", server, top=4)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(QUESTION)
    assert len(nodes) == 4
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert nodes[0].node.metadata["treenav_document_id"] == "Nikola_Tesla"
    assert nodes[0].node.node_id == nodes[0].node.metadata["treenav_id"]
    assert nodes[0].score == nodes[0].node.metadata["treenav_score"]


def test_both_retrievers_take_the_same_keywords_k_and_options(server: str) -> None:
    from treenav_client import TreenavError
    from treenav_client.langchain import TreenavRetriever
    from treenav_client.llama_index import TreenavLlamaRetriever

    lc = TreenavRetriever(tree="sample", base_url=server, k=2)
    assert len(lc.invoke(QUESTION)) == 2
    lc = TreenavRetriever(tree="sample", base_url=server, search_kwargs={"k": 3, "per_document": 1})
    docs = lc.invoke(QUESTION)
    assert len(docs) == 3 and len({d.metadata["treenav_document_id"] for d in docs}) == 3
    with pytest.raises(TreenavError):
        TreenavRetriever(tree="sample", base_url=server, search_kwargs={"filter": ["a"]}).invoke(QUESTION)
    with pytest.raises(TreenavError) as e:
        TreenavRetriever(tree="sample", base_url=server, search_kwargs={"kk": 3}).invoke(QUESTION)
    assert e.value.status == 400 and e.value.field == "kk"
    # Any navigator setting goes through by its name; its range is the server's.
    lc = TreenavRetriever(tree="sample", base_url=server, k=2, search_kwargs={"explore_budget": 50, "always_judge": True})
    assert len(lc.invoke(QUESTION)) == 2
    with pytest.raises(TreenavError) as e:
        TreenavRetriever(tree="sample", base_url=server, search_kwargs={"explore_budget": -1}).invoke(QUESTION)
    assert e.value.field == "explore_budget"

    li = TreenavLlamaRetriever(tree="sample", base_url=server, similarity_top_k=3)
    nodes = li.retrieve(QUESTION)
    assert len(nodes) == 3
    assert nodes[0].node.ref_doc_id == nodes[0].node.metadata["treenav_document_id"] == "Nikola_Tesla"
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)


def test_async_retrieval_never_blocks_the_event_loop(server: str) -> None:
    """32 gathered calls each through the client, LangChain and LlamaIndex:
    the loop's longest stall is measured by a 1 ms ticker, after one call
    on each path (LangChain imports its tracing on the first ``ainvoke``).
    A client built on the loop per call (the old way, 56-140 ms each)
    stalled it for over a second; the bound here (250 ms) leaves room for
    a loaded 2-core CI machine while catching that."""
    import asyncio
    import gc
    import time

    from treenav_client import TreenavClient
    from treenav_client.langchain import TreenavRetriever
    from treenav_client.llama_index import TreenavLlamaRetriever

    async def longest_stall(calls) -> float:
        done = False
        stall = 0.0

        async def ticker() -> None:
            nonlocal stall
            last = time.perf_counter()
            while not done:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                stall = max(stall, now - last)
                last = now

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        results = await asyncio.gather(*[c() for c in calls])
        done = True
        await task
        assert all(len(r) == 3 for r in results)
        return stall

    async def run() -> None:
        client = TreenavClient(server, timeout=60)
        lc = TreenavRetriever(tree="sample", base_url=server, k=3, strategy="levels")
        li = TreenavLlamaRetriever(tree="sample", base_url=server, similarity_top_k=3)
        for name, call in (
            ("client", lambda: _passages(client.aretrieve("sample", QUESTION, top=3))),
            ("langchain", lambda: lc.ainvoke(QUESTION)),
            ("llama_index", lambda: li.aretrieve(QUESTION)),
        ):
            await call()  # the framework's own first-call imports and setup
            # Python's own full collection over the objects the frameworks
            # and earlier tests made takes ~300 ms: the interpreter's pause,
            # not the client's, so they are set aside before measuring.
            gc.collect()
            gc.freeze()
            stall = await longest_stall([call for _ in range(32)])
            print(f"{name}: longest stall {stall * 1000:.1f} ms")
            gc.unfreeze()
            assert stall < 0.25, f"{name}: the event loop stalled {stall * 1000:.0f} ms"
        await client.aclose()

    asyncio.run(run())


async def _passages(found):
    return (await found).passages


def test_many_queries_in_one_batch_call(server: str) -> None:
    """``retrieve_many`` and LangChain's ``batch``/``abatch`` go through
    ``POST /v1/retrieve/batch``: the same answers as one call each, in
    order; a failing query raises, or stands in its place on request."""
    import asyncio

    from treenav_client import TreenavClient, TreenavError
    from treenav_client.langchain import TreenavRetriever

    client = TreenavClient(server, timeout=60)
    queries = [QUESTION, "Who were the Normans?", QUESTION]
    many = client.retrieve_many("sample", queries, top=3)
    assert [r.query for r in many] == queries
    alone = client.retrieve("sample", "Who were the Normans?", top=3)
    assert [p.id for p in many[1].passages] == [p.id for p in alone.passages]
    assert many[0].passages[0].document_id == "Nikola_Tesla"
    assert all(r.generation == alone.generation for r in many)
    with pytest.raises(TreenavError) as e:
        client.retrieve_many("nope", queries)
    assert e.value.status == 404 and e.value.code == "not_found"
    kept = client.retrieve_many("nope", queries[:2], return_errors=True)
    assert all(isinstance(r, TreenavError) for r in kept)
    with pytest.raises(TreenavError) as e:
        client.retrieve_many("sample", queries, k=3)
    assert e.value.status == 400 and e.value.field == "k"
    assert len(client.retrieve_many("sample", [QUESTION] * 70, top=1)) == 70  # two calls

    retriever = TreenavRetriever(tree="sample", base_url=server, k=3)
    batched = retriever.batch(queries)
    assert [[d.id for d in docs] for docs in batched] == [[d.id for d in retriever.invoke(q)] for q in queries]
    abatched = asyncio.run(retriever.abatch(queries))
    assert [[d.id for d in docs] for docs in abatched] == [[d.id for d in docs] for docs in batched]


NOTES_QUESTION = "insulin glucose goal"


def test_filters_and_metadata_through_the_client_and_both_frameworks(server: str) -> None:
    from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

    from treenav_client import TreenavClient, TreenavError
    from treenav_client.langchain import TreenavRetriever
    from treenav_client.llama_index import TreenavLlamaRetriever

    client = TreenavClient(server)
    found = client.retrieve("notes", NOTES_QUESTION, top=6, filter={"tenant": "b", "year": {"gte": 2018}})
    assert found.passages
    for p in found.passages:
        assert p.metadata["tenant"] == "b" and p.metadata["year"] >= 2018
    unfiltered = client.retrieve("notes", NOTES_QUESTION, top=6)
    # Unfiltered, the insulin notes (all tenant a) come first.
    assert unfiltered.passages[0].metadata["tenant"] == "a"
    assert client.retrieve("notes", NOTES_QUESTION, filter={"tenant": "nobody"}).passages == []
    with pytest.raises(TreenavError) as bad:
        client.retrieve("notes", NOTES_QUESTION, filter={"year": {"like": 1}})
    assert bad.value.status == 400 and "like" in str(bad.value)

    lc = TreenavRetriever(tree="notes", base_url=server, k=4, search_kwargs={"filter": {"lang": "de"}})
    docs = lc.invoke(NOTES_QUESTION)
    assert docs and all(d.metadata["lang"] == "de" for d in docs)
    assert all(d.metadata["treenav_tree"] == "notes" and "tenant" in d.metadata for d in docs)

    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="tenant", value="a"),
            MetadataFilter(key="year", value=2020, operator=FilterOperator.LT),
        ]
    )
    li = TreenavLlamaRetriever("notes", server, similarity_top_k=4, filters=filters)
    nodes = li.retrieve(NOTES_QUESTION)
    assert nodes and all(n.node.metadata["tenant"] == "a" and n.node.metadata["year"] < 2020 for n in nodes)
    with pytest.raises(TreenavError):
        TreenavLlamaRetriever(
            "notes",
            server,
            filters=MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")], condition="or"),
        )


def test_documents_are_added_and_deleted_through_the_client_and_both_frameworks(server: str) -> None:
    from langchain_core.documents import Document
    from llama_index.core import Document as LlamaDocument

    from treenav_client import TreenavClient, TreenavError
    from treenav_client.langchain import TreenavRetriever
    from treenav_client.llama_index import TreenavLlamaRetriever

    client = TreenavClient(server)
    before = next(t for t in client.trees() if t.name == "scratch").documents
    done = client.add_documents("scratch", [{"id": "q1", "doc_id": "q1", "title": "Quokka", "text": "The quokka zzquokka smiles.", "team": "x"}])
    assert (done.added, done.replaced, done.documents) == (1, 0, before + 1)
    assert (done.unchanged, done.passages_embedded_again) == (0, 0)
    found = client.retrieve("scratch", "zzquokka", top=1)
    assert found.passages[0].document_id == "q1" and found.passages[0].metadata["team"] == "x"

    lc = TreenavRetriever(base_url=server, tree="scratch", k=1)
    ids = lc.add_documents([Document(page_content="A wombat zzwombat digs.", metadata={"title": "Wombat", "team": "y"})], ids=["w1"])
    assert ids == ["w1"]
    top = lc.invoke("zzwombat")[0]
    assert top.metadata["treenav_document_id"] == "w1" and top.metadata["team"] == "y"
    assert top.metadata["title"] == "Wombat", top.metadata  # the title given comes back where it was
    assert lc.delete(["w1"]) is True
    assert all(d.metadata["treenav_document_id"] != "w1" for d in lc.invoke("zzwombat"))
    assert lc.delete(["never-there"]) is False

    li = TreenavLlamaRetriever(tree="scratch", base_url=server, similarity_top_k=1)
    li.insert(LlamaDocument(text="The numbat zznumbat eats termites.", doc_id="n1", metadata={"title": "Numbat"}))
    assert li.retrieve("zznumbat")[0].node.ref_doc_id == "n1"
    li.delete_ref_doc("n1")
    assert all(n.node.ref_doc_id != "n1" for n in li.retrieve("zznumbat"))

    # A TextNode inserts too; the user's own `score` and `rank` fields come
    # back as they were (`id` names the passage on the wire), ours under `treenav_`, and the text an
    # LLM or an embedder sees carries the user's fields, none of ours.
    from llama_index.core.schema import MetadataMode, TextNode

    li.insert(TextNode(id_="b1", text="The bilby zzbilby burrows.", metadata={"title": "Bilby", "score": "A+", "rank": "captain"}))
    node = li.retrieve("zzbilby")[0]
    assert node.node.ref_doc_id == "b1" and node.node.node_id == "b1"
    meta = node.node.metadata
    assert (meta["score"], meta["rank"]) == ("A+", "captain")
    assert meta["treenav_rank"] == 1 and meta["treenav_score"] == node.score
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        seen = node.node.get_content(metadata_mode=mode)
        assert "treenav_" not in seen and "score: A+" in seen and "zzbilby" in seen, seen
        assert "title: Bilby" in seen, seen  # the LLM sees the title (#67 row 5)
    li.delete_ref_doc("b1")

    with pytest.raises(TreenavError) as bad:
        client.add_documents("scratch", [{"id": "no-text"}])
    assert bad.value.status == 400
    with pytest.raises(TreenavError) as missing:
        client.delete_documents("no-such-tree", ["q1"])
    assert missing.value.status == 404

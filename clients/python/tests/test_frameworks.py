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
    assert first.metadata["document_id"] == "Nikola_Tesla"
    assert first.metadata["rank"] == 1 and first.metadata["tree"] == "sample"
    assert 0.0 <= first.metadata["score"] <= 1.0
    assert first.id == first.metadata["id"]
    guarded = TreenavRetriever(base_url=guarded_server, tree="sample", top=2, token=TOKEN)
    assert len(guarded.invoke(QUESTION)) == 2
    assert TOKEN not in repr(guarded)


def test_langchain_retriever_async(server: str) -> None:
    import asyncio

    from treenav_client.langchain import TreenavRetriever

    retriever = TreenavRetriever(base_url=server, tree="sample", top=3)
    docs = asyncio.run(retriever.ainvoke(QUESTION))
    assert [d.metadata["rank"] for d in docs] == [1, 2, 3]


def test_llama_index_retriever_returns_scored_nodes(server: str) -> None:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore

    from treenav_client.llama_index import TreenavLlamaRetriever

    retriever = TreenavLlamaRetriever("sample", server, top=4)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(QUESTION)
    assert len(nodes) == 4
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert nodes[0].node.metadata["document_id"] == "Nikola_Tesla"
    assert nodes[0].node.node_id == nodes[0].node.metadata["id"]
    assert nodes[0].score == nodes[0].node.metadata["score"]


def test_both_retrievers_take_the_same_keywords_k_and_options(server: str) -> None:
    from treenav_client import TreenavError
    from treenav_client.langchain import TreenavRetriever
    from treenav_client.llama_index import TreenavLlamaRetriever

    lc = TreenavRetriever(tree="sample", base_url=server, k=2)
    assert len(lc.invoke(QUESTION)) == 2
    lc = TreenavRetriever(tree="sample", base_url=server, search_kwargs={"k": 3, "per_document": 1})
    docs = lc.invoke(QUESTION)
    assert len(docs) == 3 and len({d.metadata["document_id"] for d in docs}) == 3
    with pytest.raises(TreenavError):
        TreenavRetriever(tree="sample", base_url=server, search_kwargs={"filter": ["a"]}).invoke(QUESTION)
    with pytest.raises(TreenavError):
        TreenavRetriever(tree="sample", base_url=server, search_kwargs={"kk": 3}).invoke(QUESTION)

    li = TreenavLlamaRetriever(tree="sample", base_url=server, similarity_top_k=3)
    nodes = li.retrieve(QUESTION)
    assert len(nodes) == 3
    assert nodes[0].node.ref_doc_id == nodes[0].node.metadata["document_id"] == "Nikola_Tesla"
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)


def test_async_retrieval_never_blocks_the_event_loop(server: str) -> None:
    import asyncio

    from treenav_client.langchain import TreenavRetriever
    from treenav_client.llama_index import TreenavLlamaRetriever

    async def run() -> int:
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        lc = TreenavRetriever(tree="sample", base_url=server, k=3, strategy="levels")
        li = TreenavLlamaRetriever(tree="sample", base_url=server, similarity_top_k=3)
        results = await asyncio.gather(
            *[lc.ainvoke(QUESTION) for _ in range(3)], *[li.aretrieve(QUESTION) for _ in range(3)]
        )
        done = True
        await task
        assert all(len(r) == 3 for r in results)
        return ticks

    assert asyncio.run(run()) > 0


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
    assert all(d.metadata["tree"] == "notes" and "tenant" in d.metadata for d in docs)

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
    found = client.retrieve("scratch", "zzquokka", top=1)
    assert found.passages[0].document_id == "q1" and found.passages[0].metadata["team"] == "x"

    lc = TreenavRetriever(base_url=server, tree="scratch", k=1)
    ids = lc.add_documents([Document(page_content="A wombat zzwombat digs.", metadata={"title": "Wombat", "team": "y"})], ids=["w1"])
    assert ids == ["w1"]
    top = lc.invoke("zzwombat")[0]
    assert top.metadata["document_id"] == "w1" and top.metadata["team"] == "y"
    assert lc.delete(["w1"]) is True
    assert all(d.metadata["document_id"] != "w1" for d in lc.invoke("zzwombat"))
    assert lc.delete(["never-there"]) is False

    li = TreenavLlamaRetriever(tree="scratch", base_url=server, similarity_top_k=1)
    li.insert(LlamaDocument(text="The numbat zznumbat eats termites.", doc_id="n1", metadata={"title": "Numbat"}))
    assert li.retrieve("zznumbat")[0].node.ref_doc_id == "n1"
    li.delete_ref_doc("n1")
    assert all(n.node.ref_doc_id != "n1" for n in li.retrieve("zznumbat"))

    with pytest.raises(TreenavError) as bad:
        client.add_documents("scratch", [{"id": "no-text"}])
    assert bad.value.status == 400
    with pytest.raises(TreenavError) as missing:
        client.delete_documents("no-such-tree", ["q1"])
    assert missing.value.status == 404

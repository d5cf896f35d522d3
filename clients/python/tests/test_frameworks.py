"""The LangChain and LlamaIndex retrievers, with the real frameworks."""

from __future__ import annotations

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

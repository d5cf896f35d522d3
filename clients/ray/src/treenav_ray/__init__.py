"""treenav's sharded build on a Ray cluster.

``build()`` runs the build the way ``treenav build`` does in one process,
with the two parts that grow with the corpus spread over the cluster:

1. ``treenav texts`` lists the texts the build embeds (one per document
   node, one per passage), in row order;
2. Ray Data reads them in batches and embeds them in a pool of actors with
   the tree's embedder (bge-small on ONNX Runtime: the same model file,
   tokenizer, truncation and CLS pooling as treenav's), into ``.npy`` files;
3. ``treenav build --plan`` splits the root over those vectors;
4. every ``treenav build --plan --shard I/N`` runs as a Ray task (retried by
   Ray when its worker dies; a rerun keeps the shards already built);
5. ``treenav merge`` joins them into the tree.

The tree is byte for byte the one ``treenav build --embedder bge-small
--embeddings documents.npy --passage-embeddings passages.npy`` makes from
the same vectors.

``build_parts()`` builds a corpus too large for one machine's tree in parts
(``treenav build --part I/N`` as Ray tasks); ``treenav-ray serve``
(``treenav_ray.serve``) serves them as one tree on Ray Serve.
"""

from .driver import BuildReport, build, build_parts, embed_texts
from .embed import BgeSmall

__all__ = ["BgeSmall", "BuildReport", "build", "build_parts", "embed_texts"]

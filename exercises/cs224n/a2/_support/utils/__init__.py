"""CS224n assignment 2's `utils` package, as word2vec.py imports it, written for the grader.

It holds only what word2vec.py's header imports: `utils.utils` (softmax, normalizeRows) and
`utils.gradcheck` (the course's checks, here harmless stubs: the grader does the checking).
"""

"""A running vLLM server as a source of the same records (issue 18).

SpecLens reads a baseline and a speculative OpenAI-compatible vLLM server
through their HTTP API and builds the ``RunTrace`` / ``CompareRecord`` the
in-process engine builds. This layer imports no vLLM: it is a client.
"""

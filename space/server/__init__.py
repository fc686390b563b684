"""A baseline and a speculative vLLM server, read over HTTP, as a source of the same
``RunTrace`` / ``CompareRecord`` the in-process engines build. No vLLM import: a client.
"""

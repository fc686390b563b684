"""The SpecLens web app (Gradio): one builder per panel, thin handlers.

``space.ui.app.build_demo`` composes the panels of ``space.ui.panels``;
``space.ui.handlers`` calls the engine layer (``space.runs.runner``) and ``vis/``
and nothing else; ``space.ui.views`` turns a record into what each panel shows.
"""

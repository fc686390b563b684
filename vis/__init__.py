"""Pure rendering of SpecLens records: HTML, plotly figures, DataFrames and text out."""
from vis.acceptance import acceptance_summary_html, accepted_histogram_figure, per_position_figure
from vis.anatomy import costs_table_html, step_breakdown_html
from vis.compare import compare_html, compare_table, steps_dataframe
from vis.stepper import describe_step, emitting_step_indices
from vis.timeline import timeline_figure
from vis.tokens import legend_html, token_entries, token_view_html

__all__ = [
    "accepted_histogram_figure", "acceptance_summary_html", "compare_html", "compare_table",
    "costs_table_html", "step_breakdown_html",
    "describe_step", "emitting_step_indices", "legend_html", "per_position_figure",
    "steps_dataframe", "timeline_figure", "token_entries", "token_view_html",
]

"""Pure rendering of SpecLens records: HTML, plotly figures, DataFrames and text out."""

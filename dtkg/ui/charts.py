"""Plotly figures: the graph of the top reasoning paths and the per-stage time chart."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from dtkg.trace import Path, Stats

CHOSEN = "#d62728"
OTHER = "#9aa5b1"
NODE = "#1f77b4"


def _node_key(label: str, item_id: str) -> str:
    return item_id or f"literal:{label}"


def paths_figure(paths: Sequence[Path], *, top: int = 5) -> go.Figure | None:
    """Entities as nodes, relations as labelled arrows; the best (chosen) path in red.

    Layout is layered by hop depth (x) and by path rank (y); an entity met again keeps the
    position of its first appearance, so shared intermediates show as one node.
    """
    shown = [p for p in paths[:top] if p.hops]
    if not shown:
        return None
    positions: dict[str, tuple[float, float]] = {}
    labels: dict[str, str] = {}
    on_chosen: set[str] = set()

    def place(label: str, item_id: str, depth: int, row: int) -> str:
        key = _node_key(label, item_id)
        if key not in positions:
            used = {y for x, y in positions.values() if x == depth}
            y = -float(row)
            while y in used:
                y -= 0.5
            positions[key] = (float(depth), y)
            labels[key] = f"{label} ({item_id})" if item_id else label
        return key

    edges: list[tuple[str, str, str, bool, float]] = []
    for row, path in enumerate(shown):
        chosen = row == 0
        prev = place(path.hops[0].subject, path.hops[0].subject_id, 0, row)
        if chosen:
            on_chosen.add(prev)
        for depth, hop in enumerate(path.hops, start=1):
            node = place(hop.object, hop.object_id, depth, row)
            if chosen:
                on_chosen.add(node)
            edges.append((prev, node, hop.relation, chosen, path.score))
            prev = node

    fig = go.Figure()
    # Draw the other paths first, the chosen one on top; relations between the same two
    # nodes (e.g. director and screenwriter) get stacked labels instead of overlapping.
    seen: dict[tuple[str, str], list[str]] = {}
    for src, dst, relation, chosen, path_score in sorted(edges, key=lambda e: not e[3]):
        labels_here = seen.setdefault((src, dst), [])
        if relation in labels_here:
            continue
        labels_here.append(relation)
        (x0, y0), (x1, y1) = positions[src], positions[dst]
        if len(labels_here) == 1:
            fig.add_annotation(
                x=x1,
                y=y1,
                ax=x0,
                ay=y0,
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                showarrow=True,
                arrowhead=3,
                arrowsize=1.2,
                arrowwidth=3 if chosen else 1.5,
                arrowcolor=CHOSEN if chosen else OTHER,
                standoff=12,
                startstandoff=12,
                text="",
            )
        fig.add_annotation(
            x=(x0 + x1) / 2,
            y=(y0 + y1) / 2,
            text=relation,
            showarrow=False,
            yshift=12 + 16 * (len(labels_here) - 1),
            font={"size": 13 if chosen else 11, "color": CHOSEN if chosen else "#52606d"},
            hovertext=f"path score {path_score:.4f}",
        )
    keys = list(positions)
    fig.add_trace(
        go.Scatter(
            x=[positions[k][0] for k in keys],
            y=[positions[k][1] for k in keys],
            mode="markers+text",
            text=[labels[k].split(" (")[0] for k in keys],
            hovertext=[labels[k] for k in keys],
            hoverinfo="text",
            textposition="bottom center",
            marker={
                "size": [20 if k in on_chosen else 14 for k in keys],
                "color": [CHOSEN if k in on_chosen else NODE for k in keys],
                "line": {"width": 1, "color": "white"},
            },
            showlegend=False,
        )
    )
    depth = max(len(p.hops) for p in shown)
    fig.update_layout(
        title="Top reasoning paths (chosen path in red)",
        xaxis={"visible": False, "range": [-0.5, depth + 0.5]},
        yaxis={"visible": False, "range": [min(y for _, y in positions.values()) - 0.8, 0.8]},
        height=max(260, 110 * len({y for _, y in positions.values()}) + 140),
        margin={"l": 20, "r": 20, "t": 50, "b": 20},
        plot_bgcolor="white",
    )
    return fig


def stages_figure(stats: Stats) -> go.Figure | None:
    """Horizontal bars: seconds spent per pipeline stage."""
    if not stats.seconds:
        return None
    stages = list(stats.seconds)
    seconds = [stats.seconds[s] for s in stages]
    fig = go.Figure(
        go.Bar(
            x=seconds,
            y=stages,
            orientation="h",
            text=[f"{s:.2f} s" for s in seconds],
            textposition="auto",
            marker_color=NODE,
        )
    )
    fig.update_layout(
        title=f"Time per stage (total {stats.total_seconds:.2f} s)",
        xaxis_title="seconds",
        yaxis={"autorange": "reversed"},
        height=max(240, 40 * len(stages) + 120),
        margin={"l": 20, "r": 20, "t": 50, "b": 40},
    )
    return fig

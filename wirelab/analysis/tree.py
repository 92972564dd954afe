"""Study W's decision tree: which factors decide whether a protocol beats the baseline.

Each configuration is one sample: its numeric factors (RTT, bandwidth, loss, object count, object
size, …) and W's class of s = PLT_x / PLT_base (``better`` < 0.9, ``worse`` > 1.1, else ``equal``).
A scikit-learn ``DecisionTreeClassifier`` (Gini, depth ≤ 4 by default, seeded) is fitted on them.
As in W, a node is **labelled** with its majority class only when that class's share of the node's
configurations (its *likelihood*) exceeds 0.75; other nodes stay unlabelled ("mixed"). The factors
used at the root and the level below are the ones that decide most, and the feature importances
(total Gini decrease per factor, normalised) say how much.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier

from wirelab.errors import UsageError

__all__ = ["LABEL_THRESHOLD", "TreeNode", "TreeResult", "fit_tree"]

LABEL_THRESHOLD = 0.75


@dataclasses.dataclass(frozen=True)
class TreeNode:
    """One node of the fitted tree."""

    id: int
    depth: int
    feature: str | None  #: split factor (None for a leaf)
    threshold: float | None  #: samples with feature ≤ threshold go left
    left: int | None
    right: int | None
    samples: int  #: configurations reaching the node
    counts: dict[str, int]  #: configurations per class
    majority: str
    likelihood: float  #: share of the majority class
    label: str | None  #: the majority class when likelihood > the threshold, else None

    @property
    def is_leaf(self) -> bool:
        return self.feature is None


@dataclasses.dataclass
class TreeResult:
    """A fitted tree and what it says."""

    classifier: DecisionTreeClassifier
    features: list[str]
    classes: list[str]
    nodes: list[TreeNode]
    importances: dict[str, float]  #: factor → importance (sums to 1 when the tree splits at all)
    accuracy: float  #: share of configurations the tree classifies correctly (training data)
    samples: int
    threshold: float = LABEL_THRESHOLD

    @property
    def root(self) -> TreeNode:
        return self.nodes[0]

    def leaves(self) -> list[TreeNode]:
        return [n for n in self.nodes if n.is_leaf]

    def top_factors(self) -> list[str]:
        """Factors split on at the root and the level below, root first."""
        seen: dict[str, None] = {}
        for node in sorted(self.nodes, key=lambda n: (n.depth, n.id)):
            if node.depth <= 1 and node.feature is not None:
                seen.setdefault(node.feature)
        return list(seen)

    def rules(self, names: Mapping[str, str] | None = None, fmt: str = "{:g}") -> list[tuple[str, TreeNode]]:
        """One (condition, leaf) per leaf; ``names`` maps factors to display names."""
        names = names or {}
        out: list[tuple[str, TreeNode]] = []

        def walk(node: TreeNode, conds: list[str]) -> None:
            if node.is_leaf:
                out.append((" and ".join(conds) or "all configurations", node))
                return
            name = names.get(node.feature or "", node.feature or "")
            value = fmt.format(node.threshold)
            walk(self.nodes[node.left], [*conds, f"{name} ≤ {value}"])  # type: ignore[index]
            walk(self.nodes[node.right], [*conds, f"{name} > {value}"])  # type: ignore[index]

        walk(self.root, [])
        return out


def fit_tree(
    data: pd.DataFrame,
    factors: Sequence[str],
    target: str = "cls",
    *,
    max_depth: int = 4,
    min_samples_leaf: int | None = None,
    threshold: float = LABEL_THRESHOLD,
    random_state: int = 0,
) -> TreeResult:
    """Fit the tree on ``data``'s ``factors`` (numeric columns) → ``target`` (class labels).

    Rows with a missing class or factor are dropped; factors with a single value are ignored.
    ``min_samples_leaf`` defaults to 1 below 40 configurations and 2.5 % of them above."""
    frame = data.dropna(subset=[target, *factors])
    usable = [f for f in factors if frame[f].astype(float).nunique() > 1]
    if frame.empty or not usable:
        raise UsageError("tree: needs configurations with a class and at least one factor that varies")
    x = frame[usable].astype(float).to_numpy()
    y = frame[target].astype(str).to_numpy()
    if min_samples_leaf is None:
        min_samples_leaf = 1 if len(frame) < 40 else max(1, round(len(frame) * 0.025))
    clf = DecisionTreeClassifier(
        max_depth=max_depth, min_samples_leaf=min_samples_leaf, random_state=random_state
    )
    clf.fit(x, y)
    tree = clf.tree_
    classes = [str(c) for c in clf.classes_]
    depth = {0: 0}
    nodes: list[TreeNode] = []
    for i in range(tree.node_count):
        left, right = int(tree.children_left[i]), int(tree.children_right[i])
        leaf = left == right
        if not leaf:
            depth[left] = depth[right] = depth[i] + 1
        n = int(tree.n_node_samples[i])
        value = np.asarray(tree.value[i][0], dtype=float)
        shares = value / value.sum() if value.sum() > 0 else value
        counts = {c: int(round(s * n)) for c, s in zip(classes, shares, strict=True)}
        best = int(np.argmax(shares))
        likelihood = float(shares[best])
        nodes.append(
            TreeNode(
                id=i,
                depth=depth[i],
                feature=None if leaf else usable[int(tree.feature[i])],
                threshold=None if leaf else float(tree.threshold[i]),
                left=None if leaf else left,
                right=None if leaf else right,
                samples=n,
                counts=counts,
                majority=classes[best],
                likelihood=likelihood,
                label=classes[best] if likelihood > threshold else None,
            )
        )
    importances = {f: float(v) for f, v in zip(usable, clf.feature_importances_, strict=True)}
    return TreeResult(
        classifier=clf,
        features=usable,
        classes=classes,
        nodes=nodes,
        importances=importances,
        accuracy=float((clf.predict(x) == y).mean()),
        samples=len(frame),
        threshold=threshold,
    )

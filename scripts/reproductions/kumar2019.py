"""Kumar et al., NeurIPS 2019 (TwRemat): NoRemat versus TwRemat peak and
schedule length on ResNet and Transformer families of increasing depth, and
the treewidth of every corpus graph (and of the peer graphs when present)."""
import json
import os

from .common import ROOT, gb, header, table


def reproduce(remat, args):
    lines = header("Kumar et al. 2019 — TwRemat: flat memory for a longer schedule",
                   "kumar2019", args)
    if args.quick:
        families = [("ResNet (CIFAR layout, 32x32, batch 32)",
                     [f"resnet:depth={d},image=32,batch=32" for d in (8, 20)]),
                    ("Transformer encoder (seq 128, batch 8)",
                     [f"transformer:layers={l},seq=128" for l in (1, 2)])]
    else:
        families = [("ResNet (CIFAR layout, 32x32, batch 32)",
                     [f"resnet:depth={d},image=32,batch=32"
                      for d in (20, 56, 110, 218, 434, 866)]),
                    ("Transformer encoder (d_model 512, seq 128, batch 8)",
                     [f"transformer:layers={l},seq=128" for l in (2, 4, 8, 16, 32, 64)])]
    specs = [s for _, ss in families for s in ss]
    infos = dict(zip(specs, remat.parallel(remat.info, specs)))
    nor = dict(zip(specs, remat.parallel(lambda s: remat.solve("noremat", s), specs)))
    tw = dict(zip(specs, remat.parallel(lambda s: remat.solve("twremat", s), specs)))
    lines += ["## Setting", "",
              "`noremat` and `twremat` (no budget: the full separator recursion, "
              "`max_depth=-1`) on generator families of increasing depth. Peak = "
              "simulated activation peak; length = number of compute events; "
              "\"x max value\" = peak / the largest single value of the graph, the "
              "unit of the paper's O(k log n) bound. Published: peak memory that "
              "stays flat as layers are added, at a schedule 3–4x longer "
              "(as summarized by the reviewers); treewidth small and bounded.", ""]
    for title, ss in families:
        rows, ratios = [], []
        for s in ss:
            i, n, t = infos[s], nor[s], tw[s]
            big = None  # largest value, from graph info
            lv = i.get("largest_value", {}).get("mem_bytes")
            ratio = t["length"] / n["length"] if t.get("length") else None
            ratios.append(ratio)
            rows.append([f"`{s}`", i["nodes"], i["treewidth_upper_bound"],
                         gb(n["peak_bytes"], 3), gb(t["peak_bytes"], 3),
                         "–" if not lv else f"{t['peak_bytes'] / lv:.1f}",
                         n["length"], t["length"],
                         "–" if ratio is None else f"{ratio:.2f}",
                         f"{t['overhead']:.2f}", t["status"]])
        first, last = ss[0], ss[-1]
        grow_n = nor[last]["peak_bytes"] / nor[first]["peak_bytes"]
        grow_t = tw[last]["peak_bytes"] / tw[first]["peak_bytes"]
        grow_nodes = infos[last]["nodes"] / infos[first]["nodes"]
        lines += [f"## {title}", "",
                  table(["graph", "nodes", "treewidth (upper bound)", "NoRemat peak (GB)",
                         "TwRemat peak (GB)", "TwRemat peak (x max value)",
                         "NoRemat length", "TwRemat length", "length ratio",
                         "TwRemat overhead", "status"], rows), "",
                  f"From the first to the last graph the node count grows "
                  f"{grow_nodes:.1f}x, the NoRemat peak {grow_n:.1f}x and the TwRemat "
                  f"peak {grow_t:.2f}x.", ""]
        lo, hi = min(r for r in ratios if r), max(r for r in ratios if r)
        note = (f"Length ratio TwRemat / NoRemat: ours {lo:.2f}–{hi:.2f}, published 3–4.")
        if lo < 3 * 0.9 or hi > 4 * 1.1:
            note += (" The difference is one of granularity and schedule "
                     "accounting: the paper's graphs are TensorFlow graphs with many "
                     "small operations and its length counts every operation, while "
                     "these generators emit one node per layer-level operation and our "
                     "post-pass drops computes whose value is never used; the ratio "
                     "grows slowly with depth (the recursion depth grows as log n), "
                     "as the table shows.")
        if grow_t > 1.1:
            note += (f" Our TwRemat peak is not exactly flat ({grow_t:.2f}x over a "
                     f"{grow_nodes:.0f}x deeper graph): the bound is O(k log n) in units "
                     "of the largest value, and the separator hierarchy gains a level "
                     "each time the depth doubles; the NoRemat peak grows linearly.")
        lines += [note, ""]

    # Treewidth of every corpus graph.
    rows = []
    corpus_dir = os.path.join(ROOT, "graphs", "corpus")
    manifests = sorted(p for p in os.listdir(corpus_dir) if p.endswith(".json")) \
        if os.path.isdir(corpus_dir) else []
    if args.quick:
        manifests = [m for m in manifests if m == "default.json"]
    corpus_specs = []
    for m in manifests:
        with open(os.path.join(corpus_dir, m)) as f:
            try:
                doc = json.load(f)
            except json.JSONDecodeError:
                continue
        if doc.get("format") != "rematbench-corpus":
            continue
        for g in doc.get("graphs", []):
            if "spec" in g:
                corpus_specs.append((m, g["spec"], g["spec"]))
            elif "path" in g:
                p = os.path.normpath(os.path.join(corpus_dir, g["path"]))
                if os.path.exists(p):
                    corpus_specs.append((m, os.path.relpath(p, ROOT), os.path.relpath(p, ROOT)))
                else:
                    rows.append([m, f"`{g['path']}`", "not present"
                                 + (" (optional)" if g.get("optional") else ""), "–", "–"])
    peer = []
    if not args.quick:
        for sub in ("kusumoto2019", "checkmate2020"):
            d = os.path.join(args.shared, "peer-graphs", sub)
            if os.path.isdir(d):
                for fn in sorted(os.listdir(d)):
                    if fn.endswith((".txt", ".json")):
                        p = os.path.relpath(os.path.join(d, fn), ROOT)
                        peer.append((f"peer-graphs/{sub}", p, p))
    seen = {os.path.normpath(s) for _, s, _ in corpus_specs}
    todo = corpus_specs + [t for t in peer if os.path.normpath(t[1]) not in seen]
    got = remat.parallel(lambda t: remat.info(t[1]), todo)
    for (m, spec, label), i in zip(todo, got):
        rows.append([m, f"`{label}`", i["nodes"], i["edges"], i["treewidth_upper_bound"]])
    lines += ["## Treewidth of the corpus graphs", "",
              "Upper bound from the greedy min-fill tree decomposition "
              "(`remat graph info`, `treewidth_upper_bound`) of every graph listed in "
              "`graphs/corpus/*.json`"
              + (" and of the peer graphs in `../shared/peer-graphs`" if peer else "")
              + ((" (peer graphs: not present, skipped)" if not os.path.isdir(
                  os.path.join(args.shared, "peer-graphs")) else "") if not args.quick
                 else " (quick mode: only `default.json`, peer graphs skipped)") + ".", "",
              table(["source", "graph", "nodes", "edges", "treewidth"], rows), ""]
    if rows:
        widths = [r[4] for r in rows if isinstance(r[4], int)]
        nets = [r[4] for r in rows if isinstance(r[4], int) and "random_layered" not in r[1]]
        if widths:
            lines += [f"Largest upper bound: {max(widths)} over {len(widths)} graphs"
                      + (f"; {max(nets)} over the {len(nets)} network graphs (all but "
                         "the random layered DAGs, which are not networks and whose "
                         "width grows with their size)" if nets and len(nets) < len(widths)
                         else "") + ". Published: small and bounded for real networks.",
                      ""]
    return lines

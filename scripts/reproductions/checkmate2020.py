"""Jain et al., MLSys 2020 (Checkmate): the largest VGG19 batch in 16 GB with
at most one extra forward pass, per algorithm, by bisection on the batch."""
import os

from .common import GB, ROOT, gb, header, pct, table


CHECKMATE = [  # algorithm, label, published maximum batch size
    ("noremat", "checkpoint all (NoRemat)", 167),
    ("chen_sqrtn", "Chen et al. sqrt(n)", 197),
    ("chen_greedy", "Chen et al. greedy", 266),
    ("checkmate_milp", "Checkmate MILP (optimal)", 289),
    ("checkmate_lp", "Checkmate LP rounding", None),
    ("dp_exact", "Kusumoto exact DP", None),
    ("dp_approx", "Kusumoto approx DP", None),
    ("revolve", "revolve", None),
    ("twremat", "TwRemat", None),
    ("rotor", "Rotor (Beaumont et al.)", None),
    ("dtr", "DTR (online, h_dtr)", None),
]
GPU_BYTES = 16 * 1000 ** 3  # Checkmate's platform_memory("p32xlarge"): 16 * 1000^3


def reproduce(remat, args):
    depth, image = (11, 32) if args.quick else (19, 224)
    gpu = 11 * 10 ** 8 if args.quick else GPU_BYTES
    lines = header("Jain et al. 2020 (Checkmate) — largest VGG19 batch in 16 GB "
                   "with at most one extra forward pass", "checkmate2020", args)

    def spec(b):
        return f"vgg:depth={depth},batch={b},image={image}"

    fwd1 = remat.forward_cost(spec(1))
    info1 = remat.info(spec(1))
    limit = (info1["base_cost"] + fwd1) / info1["base_cost"]

    def ok(algorithm, b, timeout):
        g = spec(b)
        i = remat.info(g)
        budget = gpu - i["static_bytes"]
        if budget <= 0:
            return False, None
        fwd = fwd1 * b  # every FLOP count of the generator is linear in the batch
        # The question is whether a schedule within both limits exists: the
        # MILP need not run when its warm start already is one.
        params = ((f"cost_target={i['base_cost'] + fwd}",)
                  if algorithm == "checkmate_milp" else ())
        a = remat.solve(algorithm, g, budget, params, timeout)
        # A valid schedule within both limits counts, also one returned at a
        # time limit (checkmate_milp's incumbent).
        good = (a["status"] in ("feasible", "timeout") and a.get("valid")
                and a["peak_bytes"] <= budget and a["cost"] <= i["base_cost"] + fwd)
        return good, a

    def largest(task):
        algorithm, timeout = task
        lo, hi = 1, 2
        good, _ = ok(algorithm, lo, timeout)
        if not good:
            return algorithm, 0
        while ok(algorithm, hi, timeout)[0]:
            lo, hi = hi, hi * 2
            if hi > 1 << 16:
                return algorithm, lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(algorithm, mid, timeout)[0]:
                lo = mid
            else:
                hi = mid
        return algorithm, lo

    milp = args.milp_seconds > 0
    algos = [a for a, *_ in CHECKMATE if a != "checkmate_milp" or milp]
    result = dict(remat.parallel(largest, [(a, args.milp_seconds if a == "checkmate_milp"
                                            else 600) for a in algos]))
    lines += ["## Setting", "",
              f"Graph: `{spec('B')}` (the `vgg` generator: torchvision's VGG-{depth} "
              "without dropout, fp32; FLOP costs, backward 2x forward). Memory: the "
              f"schedule's simulated activation peak + `static_bytes` (parameters, "
              f"their gradients, the input batch) must fit {gpu / GB:g} GB "
              "(Checkmate's 16 x 1000^3 bytes for a V100), so each solve gets the "
              f"activation budget {gpu / GB:g} GB - `static_bytes`. Compute: at most one extra "
              "forward pass, i.e. cost <= base cost + the cost of the forward and "
              f"loss nodes; for this graph that is an overhead limit of {limit:.4f} "
              "(it does not depend on the batch). For each algorithm the script "
              "doubles the batch, then bisects it, for the largest batch whose solve "
              "is feasible within both limits.", ""]
    # Activation memory per sample, ours and (when present) Checkmate's own graph.
    per_ours = remat.info(spec(32))["noremat_peak_bytes"] / 32
    peer = os.path.join(args.shared, "peer-graphs", "checkmate2020",
                        "VGG19_256_224x224_train.json")
    per_theirs = None
    if not args.quick and os.path.exists(peer):
        per_theirs = remat.info(os.path.relpath(peer, ROOT))["noremat_peak_bytes"] / 256
    common = ("memory accounting. ")
    if per_theirs is not None:
        common += (f"The activations are not the cause: Checkmate's own VGG19 graph "
                   f"(`VGG19_256_224x224_train.json`, Keras layers, batch 256) has a "
                   f"NoRemat peak of {per_theirs / 1e6:.1f} MB per sample in our "
                   f"simulator, ours {per_ours / 1e6:.1f} MB (`noremat` on "
                   f"`{spec(32)}` / 32). ")
    else:
        common += f"Our NoRemat peak is {per_ours / 1e6:.1f} MB per sample. "
    st167 = remat.info(spec(CHECKMATE[0][2]))["static_bytes"]
    common += (f"At that rate {CHECKMATE[0][2]} samples hold "
               f"{CHECKMATE[0][2] * per_ours / GB:.1f} GB of activations, so the "
               f"paper's 16 GB must also hold about "
               f"{(gpu - CHECKMATE[0][2] * per_ours) / GB:.1f} GB more, of which our "
               f"`static_bytes` (parameters, their gradients and the batch) are "
               f"{st167 / GB:.1f} GB; the rest is something we do not count: optimizer state, TensorFlow's workspace and allocator "
               "overhead, or the stricter stage-by-stage memory accounting of "
               "Checkmate's simulator. The paper does not break the 16 GB down, so we "
               "do not tune for it; the ratios to checkpoint-all below are the "
               "comparable figures.")
    rows, notes = [], []
    for a, label, pub in CHECKMATE:
        if a not in result:
            rows.append([label, f"`{a}`", pub or "–", "not run", "–", "–", "–", "–"])
            continue
        b = result[a]
        d = None if pub is None or not b else b / pub - 1
        at = ok(a, b, args.milp_seconds if a == "checkmate_milp" else 600)[1] if b else None
        i = remat.info(spec(b)) if b else None
        rows.append([label, f"`{a}`", pub or "–", b, "–" if d is None else pct(d),
                     "–" if at is None else gb(at["peak_bytes"] + i["static_bytes"]),
                     "–" if at is None else f"{at['overhead']:.3f}",
                     "–" if at is None else at["status"]])
        if d is not None and abs(d) > 0.10:
            notes.append(checkmate_reason(label, a, pub, b, common))
    lines += ["## Maximum batch size", "",
              table(["method", "algorithm", "paper", "ours", "diff",
                     "total peak at ours (GB)", "overhead at ours", "status"], rows), ""]
    if not milp:
        lines += ["`checkmate_milp` was not run (`--milp-seconds 0`); no method here "
                  "is proven optimal for this question.", ""]
    elif result.get("checkmate_milp"):
        proof = milp_proof(remat, ok, spec, result["checkmate_milp"],
                           args.milp_seconds, gpu)
        if result.get("noremat"):
            proof += (f" Its ratio to checkpoint-all is "
                      f"{result['checkmate_milp'] / result['noremat']:.2f}x, "
                      f"published {CHECKMATE[3][2] / CHECKMATE[0][2]:.2f}x.")
        lines += [proof, ""]
    if notes:
        lines += ["Differences larger than 10%:", ""] + [f"- {n}" for n in notes] + [""]
    ratio = [(a, result[a] / result["noremat"]) for a, *_ in CHECKMATE
             if a in result and result.get("noremat")]
    lines += ["Ratios to checkpoint-all (ours): " + ", ".join(
        f"`{a}` {r:.2f}x" for a, r in ratio) + "; published: sqrt(n) 1.18x, greedy "
        "1.59x, optimal 1.73x.", ""]
    r = dict(ratio)
    for a, label, pub in CHECKMATE[1:4]:
        if a in r and pub:
            pr = pub / CHECKMATE[0][2]
            if abs(r[a] / pr - 1) > 0.10:
                lines += [f"- Ratio of {label}: paper {pr:.2f}x, ours {r[a]:.2f}x "
                          f"({pct(r[a] / pr - 1)}) — "
                          + ("cost model and granularity: with FLOP costs, VGG's few "
                             "large early activations make the sqrt(n) segments of our "
                             "43-operation forward graph (ReLU and pooling are separate "
                             "nodes, so there are more articulation points than Keras "
                             "layers) cheaper to fit than in Checkmate's profiled Keras "
                             "graph" if a == "chen_sqrtn" else
                             "granularity and cost model: our graph has separate ReLU "
                             "and pooling nodes and FLOP costs, Checkmate's fused Keras "
                             "layers with profiled costs")
                          + ".", ""]
    if "dp_exact" in r and r["dp_exact"] < 1.1 and result.get("dp_exact"):
        b = result["dp_exact"]
        at = ok("dp_exact", b, 600)[1]
        lines += [f"`dp_exact` and `dp_approx` barely beat checkpoint-all here: they "
                  "accept a strategy only when the paper's memory estimate "
                  "(kept values + 2 M(V_i) + M(A) + M(B): a segment's values and their "
                  "gradients at once) fits the budget, and on VGG19 no strategy's "
                  "estimate is far below the NoRemat peak (the first segments hold the "
                  f"large early activations). At batch {b} the activation budget is "
                  f"{gb(at['budget_bytes'])} GB and the schedule they build peaks at "
                  f"{gb(at['peak_bytes'])} GB; one sample more and no estimate fits. "
                  "The same limit shows in the Kusumoto reproduction (VGG19 row). "
                  "This is the method as specified, not a published figure.", ""]
    return lines


def milp_proof(remat, ok, spec, b, seconds, gpu):
    """Whether checkmate_milp's largest batch b is proven: a valid schedule
    within both limits at b (the bisection's answer), and at b + 1 either no
    schedule at all (the budget is below the memory lower bound) or CBC's
    proof that no staged schedule is within both limits."""
    a = ok("checkmate_milp", b + 1, seconds)[1]
    i = remat.info(spec(b + 1))
    budget = gpu - i["static_bytes"]
    how = (f"Each `checkmate_milp` solve (at most {seconds:g} s) asks whether a "
           "schedule within both limits exists (`cost_target` = the compute limit): "
           "its warm start, the cheapest heuristic schedule staged, answers yes "
           "without the MILP solver when it is within both limits; otherwise the solver "
           "(`details.milp_solver`) minimizes the "
           "cost, and a solve stopped by the limit answers with its best schedule, "
           "which counts when it is within both limits. ")
    if a is None:
        return how + (f"Batch {b + 1} leaves no activation budget: {b} is the largest "
                      "batch, proven.")
    if a["status"] == "infeasible" and budget < i["lower_bound_bytes"]:
        return how + (f"**The maximum batch {b} is proven for every schedule, not only "
                      f"staged ones**: at batch {b + 1} the activation budget "
                      f"({gb(budget)} GB) is below the graph's memory lower bound "
                      f"({gb(i['lower_bound_bytes'])} GB: the largest operation with "
                      "its inputs), so no schedule fits, nor at any larger batch (the "
                      "bound grows with the batch, the budget shrinks); at batch "
                      f"{b} a schedule fits within both limits.")
    if a["status"] == "infeasible":
        return how + (f"The maximum batch {b} is proven among staged schedules: at "
                      f"batch {b + 1} the MILP solver proved that none fits the budget.")
    if a.get("optimal"):
        return how + (f"The maximum batch {b} is proven among staged schedules: at "
                      f"batch {b + 1} the MILP solver proved the optimum, overhead "
                      f"{a['overhead']:.3f}, above the limit.")
    return how + (f"The maximum batch {b} is **not proven**: at batch {b + 1} the "
                  f"solve stopped at its time limit ({a['status']}, "
                  f"{a.get('message', '')}).")


def checkmate_reason(label, a, pub, ours, common):
    if a == "noremat":
        return (f"**{label}**: paper {pub}, ours {ours} — {common}")
    if a == "chen_sqrtn":
        return (f"**{label}**: paper {pub}, ours {ours} — the same memory "
                "accounting as checkpoint-all; the ratio to checkpoint-all (below) is "
                "the comparable figure.")
    if a in ("chen_greedy", "checkmate_milp"):
        return (f"**{label}**: paper {pub}, ours {ours} — the same memory "
                "accounting as checkpoint-all; the ratio to checkpoint-all (below) is "
                "the comparable figure.")
    return f"**{label}**: paper {pub}, ours {ours} — {common}"

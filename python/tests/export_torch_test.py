"""Unit tests of scripts/export_torch.py's mapping from a traced training
step to graph nodes (run by ctest as python.export_torch; PYTHONPATH holds
scripts/): tiny models, exact answers worked out by hand.
tests/export_torch_test.sh checks the command line end to end.
"""

import unittest

from conftest import require_modules

torch, = require_modules("torch")
nn = torch.nn

import export_torch as E
from rematbench.torch.tagging import op_key  # noqa: E402


def op(n):
    return n["op"].split(".")[1]


def check_common(test, nodes):
    for n in nodes:
        test.assertTrue(all(x < n["id"] for x in n["inputs"]), n)
        if n["kind"] == "backward":
            test.assertIn(nodes[n["grad_of"]]["kind"], ("forward", "loss"))
    test.assertEqual(sum(n["kind"] == "loss" for n in nodes), 1)


class Mlp(unittest.TestCase):
    """Linear(4,3) - ReLU - Linear(3,2) - cross entropy, batch 2."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        inputs = (torch.randn(2, 4), torch.tensor([0, 1]))
        cls.aten, _ = E.export(E.TrainStep(model), inputs)
        cls.module, _ = E.export(E.TrainStep(model), inputs, "module")

    def test_forward_ops_views_collapsed(self):
        fwd = [(op(n), n["kind"], n["mem"], n["cost"]) for n in self.aten
               if n["kind"] != "backward"]
        self.assertEqual(fwd, [
            ("addmm", "forward", 24, 2 * 2 * 4 * 3 + 6),
            ("relu", "forward", 24, 6),
            ("addmm", "forward", 16, 2 * 2 * 3 * 2 + 4),
            ("_log_softmax", "forward", 16, 4),
            ("nll_loss_forward", "loss", 8, 4),
        ])
        check_common(self, self.aten)

    def test_backward_mapping(self):
        want = {"nll_loss_backward": "nll_loss_forward",
                "_log_softmax_backward_data": "_log_softmax",
                "threshold_backward": "relu", "mm": "addmm",
                "sum": "addmm"}
        bwd = [n for n in self.aten if n["kind"] == "backward"]
        self.assertEqual(len(bwd), 8)
        for n in bwd:
            self.assertEqual(op(self.aten[n["grad_of"]]), want[op(n)], n)
        # Parameter gradients are static: the nodes that make only them
        # (read by nobody) take no activation memory.
        read = {x for n in self.aten for x in n["inputs"]}
        for n in bwd:
            if n["id"] not in read:
                self.assertEqual(n["mem"], 0, n)
        grad_in = [n for n in bwd if op(n) == "mm" and n["id"] in read]
        self.assertEqual([n["mem"] for n in grad_in], [24])

    def test_module_granularity(self):
        names = [n["name"] for n in self.module]
        self.assertEqual(names, [
            "model.0", "model.1", "model.2", "loss", "loss_bwd",
            "model.2_bwd", "model.1_bwd", "model.0_bwd"])
        for n in self.module:
            if n["kind"] == "backward":
                self.assertEqual(n["name"],
                                 self.module[n["grad_of"]]["name"] + "_bwd")
        self.assertEqual(self.module[3]["kind"], "loss")
        # The loss keeps log_softmax (read by its backward) and the loss.
        self.assertEqual(self.module[3]["mem"], 16 + 8)
        total = lambda ns, f: sum(n.get(f, 0) for n in ns)
        self.assertEqual(total(self.module, "cost"), total(self.aten, "cost"))
        self.assertEqual(total(self.module, "mem") +
                         total(self.module, "workspace"),
                         total(self.aten, "mem"))
        check_common(self, self.module)


class InPlace(nn.Module):

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.relu = nn.ReLU(inplace=True)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        y = self.a(x)
        y += x
        return self.head(self.relu(y))


class InPlaceOps(unittest.TestCase):

    def test_functionalized(self):
        nodes, _ = E.export(E.TrainStep(InPlace()),
                            (torch.randn(2, 4), torch.tensor([0, 1])))
        fwd = [op(n) for n in nodes if n["kind"] == "forward"]
        self.assertEqual(fwd, ["addmm", "add", "relu", "addmm",
                               "_log_softmax"])
        self.assertFalse([n for n in nodes if op(n).endswith("_")])
        self.assertEqual([n["mem"] for n in nodes[:3]], [32, 32, 32])
        check_common(self, nodes)


class Conv(unittest.TestCase):

    def test_conv_flops(self):
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False),
                              nn.BatchNorm2d(8), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(8, 2))
        nodes, _ = E.export(E.TrainStep(model),
                            (torch.randn(2, 3, 8, 8), torch.tensor([0, 1])))
        conv = 2 * (2 * 8 * 8 * 8) * (3 * 3 * 3)
        self.assertEqual(nodes[0]["cost"], conv)
        self.assertEqual(nodes[0]["mem"], 2 * 8 * 8 * 8 * 4)
        # No gradient of the input batch: the backward computes only the
        # weight gradient, once the forward cost, and is a target.
        last = nodes[-1]
        self.assertEqual((op(last), last["grad_of"], last["cost"],
                          last["mem"]), ("convolution_backward", 0, conv, 0))
        check_common(self, nodes)


class Attention(unittest.TestCase):

    def test_ops_inside_one_call_map_to_their_own_forward(self):
        class Att(nn.Module):

            def __init__(self):
                super().__init__()
                self.att = nn.MultiheadAttention(8, 2, dropout=0.0)
                self.head = nn.Linear(8, 3)

            def forward(self, x):
                return self.head(self.att(x, x, x)[0]).reshape(-1, 3)

        nodes, _ = E.export(E.TrainStep(Att()),
                            (torch.randn(4, 2, 8), torch.zeros(8).long()))
        bmm = [n for n in nodes if n["kind"] == "backward" and op(n) == "bmm"]
        self.assertEqual(len(bmm), 4)
        for n in bmm:
            self.assertEqual(op(nodes[n["grad_of"]]), "bmm")
        soft = [n for n in nodes if op(n) == "_softmax_backward_data"]
        self.assertEqual(op(nodes[soft[0]["grad_of"]]), "_softmax")
        check_common(self, nodes)


class OpKey(unittest.TestCase):

    def test_names(self):
        self.assertEqual(op_key("BmmBackward0"), "bmm")
        self.assertEqual(op_key("aten.bmm.default"), "bmm")
        self.assertEqual(op_key("NllLoss2DBackward0"),
                         op_key("aten.nll_loss2d_forward.default"))
        self.assertEqual(op_key("MaxPool2DWithIndicesBackward0"),
                         op_key("aten.max_pool2d_with_indices.default"))


if __name__ == "__main__":
    unittest.main()

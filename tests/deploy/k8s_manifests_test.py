"""deploy/kubernetes/fanout_k8s.py: its manifests against the Kubernetes schema, the ip_config
they carry, and the pod command as a shell runs it.

The schema check walks every field of every manifest through the model classes of Debian's
python3-kubernetes (generated from Kubernetes' OpenAPI schema): unknown fields, wrong types and
missing required fields fail. Tests that need a module that is not installed are skipped.
"""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(HERE, "..", "..", "deploy", "kubernetes", "fanout_k8s.py")

try:
    import yaml
except ImportError:  # python3-yaml
    yaml = None
try:
    import kubernetes.client.models as k8s_models
except ImportError:  # python3-kubernetes
    k8s_models = None

BASE_ARGS = ["--name", "products", "--namespace", "gnn", "--machines", "3", "--image", "registry.example/fanout:1",
             "--data-pvc", "graphs", "--part-config", "parts/products.json", "--num-servers", "2",
             "--num-trainers", "2", "--num-samplers", "1", "--cpu", "16", "--memory", "64Gi",
             "--auth-token-secret", "fanout-token", "--tls-secret", "fanout-tls"]
TRAINER = ["fanout-train", "--model", "sage", "--fanouts", "15,10,5", "--save-model", "/data/out/it's.pt"]


def generate(args):
    return subprocess.run([sys.executable, GENERATOR] + args, capture_output=True, text=True)


def model_check(value, type_name, path, errors):
    """Appends to `errors` every way `value` departs from the schema type `type_name`."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: want a list, got {value!r}")
            return
        for i, x in enumerate(value):
            model_check(x, type_name[5:-1], f"{path}[{i}]", errors)
        return
    if type_name.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{path}: want a map, got {value!r}")
            return
        inner = type_name[type_name.index(", ") + 2:-1]
        for k, x in value.items():
            model_check(x, inner, f"{path}.{k}", errors)
        return
    simple = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if type_name in simple:
        if not isinstance(value, simple[type_name]) or (type_name == "int" and isinstance(value, bool)):
            errors.append(f"{path}: want {type_name}, got {value!r}")
        return
    if type_name == "object":  # int-or-string and free-form fields
        return
    cls = getattr(k8s_models, type_name)
    if not isinstance(value, dict):
        errors.append(f"{path}: want a {type_name} object, got {value!r}")
        return
    by_json = {j: attr for attr, j in cls.attribute_map.items()}
    present = {}
    for key, x in value.items():
        if key not in by_json:
            errors.append(f"{path}.{key}: not a field of {type_name}")
            continue
        present[by_json[key]] = x
        model_check(x, cls.openapi_types[by_json[key]], f"{path}.{key}", errors)
    try:  # the generated setters refuse None for required fields
        cls(**present)
    except (ValueError, TypeError) as e:
        errors.append(f"{path}: {type_name}: {e}")


@unittest.skipIf(yaml is None, "python3-yaml is not installed")
class Manifests(unittest.TestCase):
    def setUp(self):
        r = generate(BASE_ARGS + ["--"] + TRAINER)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.docs = list(yaml.safe_load_all(r.stdout))
        self.by_kind = {d["kind"]: d for d in self.docs}

    @unittest.skipIf(k8s_models is None, "python3-kubernetes is not installed")
    def test_every_manifest_matches_the_kubernetes_schema(self):
        kinds = {("v1", "Service"): "V1Service", ("v1", "ConfigMap"): "V1ConfigMap",
                 ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy", ("batch/v1", "Job"): "V1Job"}
        self.assertEqual(sorted(kinds.values()), sorted(kinds[(d["apiVersion"], d["kind"])] for d in self.docs))
        for d in self.docs:
            errors = []
            model_check(d, kinds[(d["apiVersion"], d["kind"])], d["kind"], errors)
            self.assertEqual(errors, [])
        # The checker itself catches what it should.
        errors = []
        bad = dict(self.by_kind["Job"], spec={"completionMode": "Indexed", "template": {}, "completons": 3})
        model_check(bad, "V1Job", "Job", errors)
        self.assertTrue(any("completons: not a field" in e for e in errors), errors)
        errors = []
        model_check({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"name": "x"}]}}, "V1Service", "S", errors)
        self.assertTrue(any("port" in e and "None" in e for e in errors), errors)

    def test_pods_get_stable_names_and_the_ip_config_lists_them_in_index_order(self):
        job, svc = self.by_kind["Job"], self.by_kind["Service"]
        spec = job["spec"]
        self.assertEqual((spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimit"]),
                         ("Indexed", 3, 3, 0))
        pod = spec["template"]["spec"]
        self.assertEqual(pod["subdomain"], svc["metadata"]["name"])
        self.assertEqual(svc["spec"]["clusterIP"], "None")
        self.assertTrue(svc["spec"]["publishNotReadyAddresses"])  # names resolve before pods are ready
        self.assertEqual(svc["spec"]["selector"], spec["template"]["metadata"]["labels"])
        lines = [l for l in self.by_kind["ConfigMap"]["data"]["ip_config.txt"].splitlines() if not l.startswith("#")]
        self.assertEqual(lines, [f"products-{k}.products.gnn.svc.cluster.local 30050" for k in range(3)])
        container = pod["containers"][0]
        self.assertEqual([p["containerPort"] for p in container["ports"]], [30050, 30051, 30052])
        self.assertEqual(container["resources"]["limits"], {"cpu": "16", "memory": "64Gi"})

    def test_only_the_jobs_own_pods_may_connect(self):
        policy = self.by_kind["NetworkPolicy"]["spec"]
        labels = self.by_kind["Job"]["spec"]["template"]["metadata"]["labels"]
        self.assertEqual(policy["podSelector"]["matchLabels"], labels)
        self.assertEqual(policy["policyTypes"], ["Ingress"])
        self.assertEqual(policy["ingress"], [{"from": [{"podSelector": {"matchLabels": labels}}]}])

    def test_the_pod_command_runs_one_launcher_per_machine_with_every_word_intact(self):
        command = self.by_kind["Job"]["spec"]["template"]["spec"]["containers"][0]["command"]
        self.assertEqual(command[:2], ["sh", "-c"])
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "fanout-launch")
            with open(fake, "w") as f:
                f.write('#!/bin/sh\nprintf "%s\\n" "$@"\n')
            os.chmod(fake, stat.S_IRWXU)
            env = dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", ""), JOB_COMPLETION_INDEX="2")
            r = subprocess.run(command, capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        argv = r.stdout.splitlines()
        flag = lambda name: argv[argv.index(name) + 1]  # noqa: E731
        self.assertEqual(flag("--machine-id"), "2")
        self.assertEqual(flag("--ip-config"), "/etc/fanout/ip_config.txt")
        self.assertEqual(flag("--part-config"), "/data/parts/products.json")
        self.assertEqual(flag("--num-trainers"), "2")
        self.assertEqual(flag("--auth-token-file"), "/etc/fanout-token/token")
        self.assertEqual(flag("--tls-ca"), "/etc/fanout-tls/ca.crt")
        self.assertEqual(argv[argv.index("--") + 1:], TRAINER)
        mounts = {m["mountPath"] for m in self.by_kind["Job"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
        self.assertEqual(mounts, {"/data", "/etc/fanout", "/etc/fanout-token", "/etc/fanout-tls"})


class BadFlags(unittest.TestCase):
    def test_each_is_refused_naming_the_flag(self):
        for args, message in [
            (["--name", "Products"], "--name 'Products'"),
            (["--machines", "0"], "--machines must be at least 1"),
            (["--port", "65535"], "--port 65535"),
            (["--namespace", "a_b"], "--namespace 'a_b'"),
        ]:
            full = list(BASE_ARGS)
            if args[0] in full:
                full[full.index(args[0]) + 1] = args[1]
            else:
                full += args
            r = generate(full)
            self.assertEqual(r.returncode, 2, (args, r.stdout))
            self.assertIn(message, r.stderr)
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()

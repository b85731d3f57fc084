#!/usr/bin/env python3
"""Writes the Kubernetes manifests of one fanout job: one pod per machine (= partition).

    deploy/kubernetes/fanout_k8s.py --name products --machines 2 --image REGISTRY/fanout:TAG \\
        --data-pvc graphs --part-config parts/products.json > job.yaml
    kubectl apply -f job.yaml

What it writes (docs/deploy.md explains each):
  - a headless Service: pod k gets the stable name <name>-k.<name>.<namespace>.svc.cluster.local;
  - a ConfigMap with the job's ip_config.txt, derived from those names;
  - a NetworkPolicy: the pods accept connections only from each other (graph servers, the
    trainers' rendezvous and their Gloo connections); add --auth-token-secret / --tls-secret for
    a token and TLS on top;
  - an Indexed Job of <machines> pods, all started together, each running
    `fanout-launch --machine-id $JOB_COMPLETION_INDEX`: machine k's servers and trainers, in
    the pod. The partition data comes from a volume (a PersistentVolumeClaim) mounted at /data.
A pod that fails fails the Job (backoffLimit 0); the others then stop on their own (the
trainers' collectives time out, see --comm-timeout).

Only the Python standard library is used, so it runs wherever Python 3 does.
"""
import argparse
import json
import re
import shlex
import sys

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def yaml_scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v)  # a JSON string is a valid YAML scalar, quoted and escaped


def to_yaml(v, indent=0):
    """Block YAML for dicts, lists and scalars (what manifests need), keys in insertion order."""
    pad = " " * indent
    lines = []
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                lines.append(f"{pad}{k}:")
                lines.append(to_yaml(x, indent + 2))
            elif isinstance(x, str) and "\n" in x:
                lines.append(f"{pad}{k}: |")
                lines.extend(f"{pad}  {line}" for line in x.rstrip("\n").split("\n"))
            elif isinstance(x, dict):
                lines.append(f"{pad}{k}: {{}}")  # empty: nested non-empty ones are above
            elif isinstance(x, list):
                lines.append(f"{pad}{k}: []")
            else:
                lines.append(f"{pad}{k}: {yaml_scalar(x)}")
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, (dict, list)) and x:
                inner = to_yaml(x, indent + 2).split("\n")
                lines.append(f"{pad}- {inner[0].lstrip()}")
                lines.extend(inner[1:])
            else:
                lines.append(f"{pad}- {yaml_scalar(x)}")
    else:
        lines.append(pad + yaml_scalar(v))
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Kubernetes manifests for a fanout job: one pod per machine (partition).",
        epilog="Everything after -- is the trainer command (default: fanout-train --model sage).")
    p.add_argument("--name", required=True, help="job name: a DNS label (lower case, digits, '-')")
    p.add_argument("--namespace", default="default")
    p.add_argument("--machines", type=int, required=True, help="pods = partitions (num_parts)")
    p.add_argument("--image", required=True, help="an image built from the project's Dockerfile")
    p.add_argument("--data-pvc", required=True, help="PersistentVolumeClaim holding the partitions, mounted at /data")
    p.add_argument("--part-config", required=True, help="the partition config, relative to /data (or absolute)")
    p.add_argument("--num-servers", type=int, default=1)
    p.add_argument("--num-trainers", type=int, default=1)
    p.add_argument("--num-samplers", type=int, default=0)
    p.add_argument("--port", type=int, default=30050, help="every pod's base server port")
    p.add_argument("--cpu", default="", help="CPU request and limit per pod, e.g. 16")
    p.add_argument("--memory", default="", help="memory request and limit per pod, e.g. 64Gi")
    p.add_argument("--server-timeout", type=float, default=600,
                   help="seconds a pod waits for every pod's servers (image pulls take a while)")
    p.add_argument("--auth-token-secret", default="",
                   help="Secret with key 'token': servers require it, trainers send it")
    p.add_argument("--tls-secret", default="",
                   help="Secret with tls.crt, tls.key and ca.crt (one certificate valid for every pod name)")
    p.add_argument("--service-account", default="")
    own, sep, command = list(argv), "--", []
    if sep in own:
        i = own.index(sep)
        own, command = own[:i], own[i + 1:]
    a = p.parse_args(own)
    a.command = command or ["fanout-train", "--model", "sage"]
    if not DNS_LABEL.match(a.name) or len(a.name) > 50:
        p.error(f"--name {a.name!r}: use lower-case letters, digits and '-', at most 50 characters")
    if not DNS_LABEL.match(a.namespace):
        p.error(f"--namespace {a.namespace!r} is not a DNS label")
    if a.machines < 1:
        p.error(f"--machines must be at least 1, not {a.machines}")
    if a.num_servers < 1 or a.num_trainers < 1 or a.num_samplers < 0:
        p.error("--num-servers and --num-trainers must be at least 1, --num-samplers 0 or more")
    if not 1 <= a.port <= 65535 - a.num_servers:
        p.error(f"--port {a.port} leaves no room for {a.num_servers} server ports and the coordinator's")
    return a


def manifests(a):
    labels = {"app.kubernetes.io/name": "fanout", "fanout.io/job": a.name}
    hosts = [f"{a.name}-{k}.{a.name}.{a.namespace}.svc.cluster.local" for k in range(a.machines)]
    ip_config = "# one pod per machine; pod k serves partition k (written by fanout_k8s.py)\n" + "".join(
        f"{h} {a.port}\n" for h in hosts)
    part_config = a.part_config if a.part_config.startswith("/") else "/data/" + a.part_config

    launch = ["fanout-launch", "--machine-id", "$JOB_COMPLETION_INDEX", "--workspace", "/data",
              "--ip-config", "/etc/fanout/ip_config.txt", "--part-config", part_config,
              "--num-servers", str(a.num_servers), "--num-trainers", str(a.num_trainers),
              "--num-samplers", str(a.num_samplers), "--server-timeout", str(a.server_timeout),
              "--job-id", a.name, "--log-dir", f"/tmp/fanout-logs/{a.name}"]
    mounts = [{"name": "data", "mountPath": "/data"},
              {"name": "ip-config", "mountPath": "/etc/fanout", "readOnly": True}]
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": a.data_pvc}},
               {"name": "ip-config", "configMap": {"name": f"{a.name}-ip-config"}}]
    if a.auth_token_secret:
        launch += ["--auth-token-file", "/etc/fanout-token/token"]
        mounts.append({"name": "token", "mountPath": "/etc/fanout-token", "readOnly": True})
        volumes.append({"name": "token", "secret": {"secretName": a.auth_token_secret, "defaultMode": 0o400}})
    if a.tls_secret:
        launch += ["--tls-cert", "/etc/fanout-tls/tls.crt", "--tls-key", "/etc/fanout-tls/tls.key",
                   "--tls-ca", "/etc/fanout-tls/ca.crt"]
        mounts.append({"name": "tls", "mountPath": "/etc/fanout-tls", "readOnly": True})
        volumes.append({"name": "tls", "secret": {"secretName": a.tls_secret, "defaultMode": 0o400}})
    # The shell only expands the index; every other word is quoted as it is.
    script = "exec " + " ".join(
        '"$JOB_COMPLETION_INDEX"' if w == "$JOB_COMPLETION_INDEX" else shlex.quote(w) for w in launch)
    script += " -- " + " ".join(shlex.quote(w) for w in a.command)

    container = {
        "name": "fanout",
        "image": a.image,
        "command": ["sh", "-c", script],
        "ports": [{"name": f"server-{s}", "containerPort": a.port + s} for s in range(a.num_servers)]
        + [{"name": "coordinator", "containerPort": a.port + a.num_servers}],
        "volumeMounts": mounts,
    }
    if a.cpu or a.memory:
        res = {k: v for k, v in (("cpu", a.cpu), ("memory", a.memory)) if v}
        container["resources"] = {"requests": res, "limits": dict(res)}

    pod_spec = {"subdomain": a.name, "restartPolicy": "Never", "containers": [container], "volumes": volumes}
    if a.service_account:
        pod_spec["serviceAccountName"] = a.service_account

    meta = lambda name: {"name": name, "namespace": a.namespace, "labels": dict(labels)}  # noqa: E731
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(a.name),
         "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": dict(labels),
                  "ports": [{"name": f"server-{s}", "port": a.port + s} for s in range(a.num_servers)]}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{a.name}-ip-config"),
         "data": {"ip_config.txt": ip_config}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta(f"{a.name}-peers-only"),
         "spec": {"podSelector": {"matchLabels": dict(labels)}, "policyTypes": ["Ingress"],
                  "ingress": [{"from": [{"podSelector": {"matchLabels": dict(labels)}}]}]}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(a.name),
         "spec": {"completionMode": "Indexed", "completions": a.machines, "parallelism": a.machines,
                  "backoffLimit": 0,
                  "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec}}},
    ]


def main(argv):
    a = parse_args(argv)
    sys.stdout.write("".join("---\n" + to_yaml(m) + "\n" for m in manifests(a)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

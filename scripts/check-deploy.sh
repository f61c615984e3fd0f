#!/usr/bin/env bash
# Checks the deployment artefacts under deploy/ without a container engine or a cluster:
#   - every YAML file under deploy/ parses (multi-document aware);
#   - Kubernetes: container ports 8080/9090 match the Service and the probes, probe paths are /healthz and /readyz,
#     the configuration's listen/admin ports match them, terminationGracePeriodSeconds > preStop sleep + drain_timeout,
#     configMapGenerator/secretGenerator files exist, ConfigMap volume items name generated keys, HPA/PDB/security;
#   - Docker: EXPOSE, HEALTHCHECK port/path, STOPSIGNAL, COPY sources exist, every target directory of Package.swift
#     is copied before `swift build` (SwiftPM refuses a manifest with a missing target directory); compose ports,
#     mounts (named volumes declared), stop_grace_period;
#   - response buffering's temporary directory (server.buffering.temp_dir): writable where the root file system is
#     read-only (a Kubernetes emptyDir whose sizeLimit exceeds server.buffering.max_temp_total; a compose volume or
#     tmpfs);
#   - Kubernetes schemas: every manifest a kustomization lists is validated strictly against the Kubernetes 1.30 API
#     schemas with `kubernetes-validate` (PyPI, installed into .build/check-deploy-venv; skipped with a note when PyPI
#     cannot be reached);
#   - systemd: TimeoutStopSec > drain_timeout, `systemd-analyze verify`; the logrotate stanza parses (`logrotate --debug`)
#     and signals the unit with SIGUSR1;
#   - `moya-gateway check --config F` on every shipped configuration (Configuration/*.yaml, Configuration/examples/*.yaml
#     with each ${VAR} set to a dummy value, deploy/**/gateway*.yaml), using .build/debug/moya-gateway
#     (or $MOYA_GATEWAY_BIN); built with `swift build --product moya-gateway` when absent.
#   - with CHECK_IMAGE=1 (opt-in: needs root and the Debian mirror, takes minutes cold): deploy/docker/verify-image.sh,
#     which builds the image's equivalent without a container engine and runs it (skips itself without a mirror).
# Prints one line per problem and exits 1 if there is any; the last line is a summary.
set -uo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# python3 with PyYAML (Debian's python3-yaml, also installed by scripts/install-deps.sh --test).
if ! "$PY" -c 'import yaml' 2>/dev/null; then
    echo "check-deploy: installing python3-yaml" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        python3 python3-yaml; } >&2 || true
fi
if ! "$PY" -c 'import yaml' 2>/dev/null; then
    echo "check-deploy: $PY with the yaml module (python3-yaml) is required and could not be installed"
    exit 1
fi

# systemd-analyze: install the systemd package only if missing and we are root.
if ! command -v systemd-analyze >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "check-deploy: installing systemd (for systemd-analyze)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd; } >&2 \
        || true
fi

# The gateway binary, for `check`.
BIN="${MOYA_GATEWAY_BIN:-.build/debug/moya-gateway}"
BUILD_PROBLEM=""
if [ ! -x "$BIN" ]; then
    echo "check-deploy: $BIN not found; building it (swift build --product moya-gateway)" >&2
    if ! swift build --product moya-gateway >&2; then
        BUILD_PROBLEM="swift build --product moya-gateway failed: cannot run moya-gateway check on the configurations"
    fi
fi

# kubernetes-validate (JSON schemas of the Kubernetes API, bundled in the package) in a private venv.
VENV=.build/check-deploy-venv
KUBE_VALIDATE=""
if [ ! -x "$VENV/bin/kubernetes-validate" ]; then
    { "$PY" -m venv "$VENV" && "$VENV/bin/pip" install -q --disable-pip-version-check kubernetes-validate; } >&2 2>&1 \
        || echo "check-deploy: could not install kubernetes-validate from PyPI; schema validation skipped" >&2
fi
[ -x "$VENV/bin/kubernetes-validate" ] && KUBE_VALIDATE="$VENV/bin/kubernetes-validate"

# The image itself, built and run without an engine (opt-in).
IMAGE_PROBLEM=""
if [ "${CHECK_IMAGE:-0}" = 1 ]; then
    echo "check-deploy: CHECK_IMAGE=1: deploy/docker/verify-image.sh" >&2
    deploy/docker/verify-image.sh >&2 || IMAGE_PROBLEM="failed (exit $?; its output is above)"
fi

export CHECK_DEPLOY_KUBE_VALIDATE="$KUBE_VALIDATE" CHECK_DEPLOY_IMAGE_PROBLEM="$IMAGE_PROBLEM"
export CHECK_DEPLOY_BIN="$BIN" CHECK_DEPLOY_BUILD_PROBLEM="$BUILD_PROBLEM"
exec "$PY" - <<'PYTHON'
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

problems = []
checks = 0


def problem(where, text):
    line = f"{where}: {text}"
    if line not in problems:          # a base checked through several overlays reports once
        problems.append(line)


def check(condition, where, text):
    global checks
    checks += 1
    if not condition:
        problem(where, text)
    return condition


def note(text):
    print(f"check-deploy: {text}", file=sys.stderr)


def duration_seconds(text):
    """`250ms`, `10s`, `2m`, `0` (docs/configuration.md durations) -> seconds; None when malformed."""
    text = str(text).strip()
    if text == "0":
        return 0.0
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", text)
    if not m:
        return None
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(2)]


def listen_port(address):
    """Port of `host:port` or `[v6]:port`; None when malformed."""
    m = re.fullmatch(r"(?:\[[^\]]+\]|[^:\[\]]+):(\d+)", str(address))
    return int(m.group(1)) if m else None


def listen_host(address):
    m = re.fullmatch(r"(\[[^\]]+\]|[^:\[\]]+):\d+", str(address))
    return m.group(1) if m else None


def load_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def gateway_config(path):
    """The parsed gateway config (with the design's defaults for the keys checked here)."""
    docs = load_docs(path)
    config = docs[0] if docs else {}
    server = config.get("server") or {}
    listen = server.get("listen", ["127.0.0.1:8080"])
    if isinstance(listen, str):
        listen = [listen]
    admin = (config.get("admin") or {}).get("listen", "127.0.0.1:9090")
    drain = ((server.get("limits") or {}).get("drain_timeout", "30s"))
    buffering = server.get("buffering") or {}
    total = buffering.get("max_temp_total", "1GiB")
    return {"listen": listen, "admin": admin, "drain": duration_seconds(drain), "drain_text": drain,
            "temp_dir": str(buffering.get("temp_dir", "/tmp")), "max_temp_total": size_bytes(total),
            "max_temp_total_text": str(total)}


def size_bytes(text):
    """A gateway size (`1GiB`, `64MiB`, `16384`, `1GB`) -> bytes; None when malformed."""
    m = re.fullmatch(r"(\d+)\s*(GiB|MiB|KiB|GB|MB|KB|B)?", str(text).strip())
    if not m:
        return None
    factor = {"GiB": 1 << 30, "MiB": 1 << 20, "KiB": 1 << 10, "GB": 10**9, "MB": 10**6, "KB": 1000, "B": 1, None: 1}
    return int(m.group(1)) * factor[m.group(2)]


def quantity_bytes(text):
    """A Kubernetes quantity (`1152Mi`, `2Gi`, `500M`, `1024`) -> bytes; None when malformed."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(text).strip())
    if not m:
        return None
    factor = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9,
              "T": 10**12, None: 1}
    return int(float(m.group(1)) * factor[m.group(2)])


def covers(mount_path, directory):
    """Whether a mount at `mount_path` holds `directory`."""
    mount_path = os.path.normpath(mount_path)
    directory = os.path.normpath(directory)
    return directory == mount_path or directory.startswith(mount_path.rstrip("/") + "/")


# ---------------------------------------------------------------------------------------------------------------------
# 1. Every YAML file under deploy/ parses.
yaml_files = sorted(set(glob.glob("deploy/**/*.yaml", recursive=True) + glob.glob("deploy/**/*.yml", recursive=True)))
parsed = {}
check(bool(yaml_files), "deploy/", "no YAML files found")
for path in yaml_files:
    try:
        parsed[path] = load_docs(path)
        check(True, path, "")
    except yaml.YAMLError as error:
        check(False, path, "YAML does not parse: " + " ".join(str(error).split()))

shipped_default = gateway_config("Configuration/gateway.yaml")

# ---------------------------------------------------------------------------------------------------------------------
# 2. Kubernetes (Kustomize).
K8S = "deploy/kubernetes"


def kustomization(directory):
    path = os.path.join(directory, "kustomization.yaml")
    if path not in parsed or not parsed[path]:
        return None
    return parsed[path][0]


def generator_entries(entry):
    """(key, file) pairs of a configMapGenerator/secretGenerator `files:` list."""
    result = []
    for item in entry.get("files") or []:
        key, _, file = str(item).partition("=")
        if not file:
            key, file = os.path.basename(key), key
        result.append((key, file))
    return result


def resources_of(directory):
    """All manifests of a kustomization, following `resources:` into bases (not rendering patches)."""
    k = kustomization(directory)
    if k is None:
        return []
    manifests = []
    for resource in k.get("resources") or []:
        target = os.path.normpath(os.path.join(directory, resource))
        if os.path.isdir(target):
            manifests += resources_of(target)
        elif target in parsed:
            manifests += [(target, d) for d in parsed[target]]
    return manifests


def configmap_keys(directory, name):
    """Keys a configMapGenerator called `name` produces here, merged over the bases' (behavior: merge/replace)."""
    k = kustomization(directory) or {}
    keys = set()
    for resource in k.get("resources") or []:
        target = os.path.normpath(os.path.join(directory, resource))
        if os.path.isdir(target):
            keys |= configmap_keys(target, name)
    for entry in k.get("configMapGenerator") or []:
        if entry.get("name") != name:
            continue
        own = {key for key, _ in generator_entries(entry)} | {str(l).split("=", 1)[0] for l in entry.get("literals") or []}
        keys = (keys | own) if entry.get("behavior", "create") != "replace" else own
    return keys


def configmap_file(directory, name, key):
    """The file behind `key` of ConfigMap `name` as seen from `directory` (overlay wins over base)."""
    k = kustomization(directory) or {}
    for entry in k.get("configMapGenerator") or []:
        if entry.get("name") == name:
            for entry_key, file in generator_entries(entry):
                if entry_key == key:
                    return os.path.normpath(os.path.join(directory, file))
    for resource in k.get("resources") or []:
        target = os.path.normpath(os.path.join(directory, resource))
        if os.path.isdir(target):
            found = configmap_file(target, name, key)
            if found:
                return found
    return None


def port_of(container, port):
    """A probe/targetPort value (number or name) -> container port number."""
    if isinstance(port, int):
        return port
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return p.get("containerPort")
    return None


def prestop_sleep(container):
    pre = ((container.get("lifecycle") or {}).get("preStop") or {})
    if "sleep" in pre:
        return float((pre["sleep"] or {}).get("seconds", 0))
    command = (pre.get("exec") or {}).get("command") or []
    if len(command) == 2 and os.path.basename(str(command[0])) == "sleep":
        try:
            return float(command[1])
        except ValueError:
            return None
    return None


kustomization_dirs = sorted(os.path.dirname(p) for p in parsed if os.path.basename(p) == "kustomization.yaml")
check(f"{K8S}/base" in kustomization_dirs, K8S, "base/kustomization.yaml is missing")

for directory in kustomization_dirs:
    k = kustomization(directory) or {}
    kpath = os.path.join(directory, "kustomization.yaml")
    for resource in k.get("resources") or []:
        target = os.path.normpath(os.path.join(directory, resource))
        check(os.path.exists(target), kpath, f"resource {resource} does not exist")
        if os.path.isdir(target):
            check(os.path.exists(os.path.join(target, "kustomization.yaml")), kpath,
                  f"resource {resource} is a directory without kustomization.yaml")
    for kind in ("configMapGenerator", "secretGenerator"):
        for entry in k.get(kind) or []:
            for _, file in generator_entries(entry):
                full = os.path.normpath(os.path.join(directory, file))
                check(os.path.isfile(full), kpath, f"{kind} {entry.get('name')}: file {file} does not exist")
                check(not os.path.relpath(full, directory).startswith(".."), kpath,
                      f"{kind} {entry.get('name')}: file {file} is outside the kustomization directory "
                      "(kustomize refuses it)")
            for file in entry.get("envs") or []:
                check(os.path.isfile(os.path.join(directory, file)), kpath,
                      f"{kind} {entry.get('name')}: env file {file} does not exist")

    manifests = resources_of(directory)
    deployments = [(p, d) for p, d in manifests if d.get("kind") == "Deployment"]
    if not deployments:
        continue
    check(len(deployments) == 1, directory, "expected exactly one Deployment")
    dpath, deployment = deployments[0]
    pod = deployment["spec"]["template"]["spec"]
    containers = pod.get("containers") or []
    if not check(len(containers) == 1, dpath, "expected one container"):
        continue
    c = containers[0]
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
    check(ports.get("http") == 8080, dpath, f"container port 'http' must be 8080, is {ports.get('http')}")
    check(ports.get("admin") == 9090, dpath, f"container port 'admin' must be 9090, is {ports.get('admin')}")

    readiness = ((c.get("readinessProbe") or {}).get("httpGet") or {})
    liveness = ((c.get("livenessProbe") or {}).get("httpGet") or {})
    check(readiness.get("path") == "/readyz", dpath, f"readinessProbe path must be /readyz, is {readiness.get('path')}")
    check(liveness.get("path") == "/healthz", dpath, f"livenessProbe path must be /healthz, is {liveness.get('path')}")
    readiness_port = port_of(c, readiness.get("port"))
    liveness_port = port_of(c, liveness.get("port"))
    check(readiness_port == ports.get("admin"), dpath,
          f"readinessProbe port {readiness.get('port')} is not the admin container port {ports.get('admin')}")
    check(liveness_port == ports.get("admin"), dpath,
          f"livenessProbe port {liveness.get('port')} is not the admin container port {ports.get('admin')}")

    # The configuration mounted into the pod: its listeners must be the container ports and reachable (not loopback).
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    config_arg = None
    args = c.get("args") or []
    if "--config" in args and args.index("--config") + 1 < len(args):
        config_arg = args[args.index("--config") + 1]
    check(config_arg is not None, dpath, "container args do not pass --config")
    config_file = None
    for mount in c.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name"), {})
        cm = volume.get("configMap")
        if not cm:
            continue
        keys = configmap_keys(directory, cm.get("name"))
        for item in cm.get("items") or []:
            check(item.get("key") in keys, dpath,
                  f"volume {mount.get('name')}: key {item.get('key')} is not generated for ConfigMap {cm.get('name')} "
                  f"(keys: {', '.join(sorted(keys)) or 'none'})")
            if config_arg and os.path.join(mount.get("mountPath", ""), item.get("path", "")) == config_arg:
                config_file = configmap_file(directory, cm.get("name"), item.get("key"))
    if check(config_file is not None, directory, f"no ConfigMap item is mounted at {config_arg}"):
        cfg = gateway_config(config_file)
        admin_port = listen_port(cfg["admin"])
        check(admin_port == readiness_port, config_file,
              f"admin.listen port {admin_port} does not match the probe port {readiness_port} of {dpath}")
        check(ports.get("http") in [listen_port(a) for a in cfg["listen"]], config_file,
              f"server.listen {cfg['listen']} does not include the http container port {ports.get('http')}")
        for address in cfg["listen"] + [cfg["admin"]]:
            check(listen_host(address) in ("0.0.0.0", "[::]"), config_file,
                  f"listen address {address} is not reachable from outside the pod (use 0.0.0.0)")
        # Response buffering's temporary files: the root file system is read-only, so temp_dir must be a volume,
        # an emptyDir larger than max_temp_total (past its sizeLimit the kubelet evicts the pod).
        if (c.get("securityContext") or {}).get("readOnlyRootFilesystem"):
            temp_mounts = [m for m in c.get("volumeMounts") or [] if covers(m.get("mountPath", ""), cfg["temp_dir"])
                           and not m.get("readOnly")]
            if check(bool(temp_mounts), dpath, f"no writable volume is mounted at server.buffering.temp_dir "
                                                f"{cfg['temp_dir']} of {config_file} (the root file system is read-only)"):
                empty = (volumes.get(temp_mounts[-1].get("name")) or {}).get("emptyDir")
                if empty is not None and empty.get("sizeLimit") is not None:
                    limit = quantity_bytes(empty.get("sizeLimit"))
                    check(limit is not None and cfg["max_temp_total"] is not None and limit > cfg["max_temp_total"],
                          dpath, f"emptyDir {temp_mounts[-1].get('name')} sizeLimit {empty.get('sizeLimit')} must exceed "
                                 f"server.buffering.max_temp_total {cfg['max_temp_total_text']} of {config_file}")
        grace = pod.get("terminationGracePeriodSeconds", 30)
        sleep = prestop_sleep(c)
        check(sleep is not None and sleep > 0, dpath, "no preStop sleep (endpoints must be removed before the drain)")
        if cfg["drain"] is not None:
            check(grace > cfg["drain"], dpath,
                  f"terminationGracePeriodSeconds {grace} must exceed drain_timeout {cfg['drain_text']} of {config_file}")
            check(grace > cfg["drain"] + (sleep or 0), dpath,
                  f"terminationGracePeriodSeconds {grace} must exceed preStop sleep {sleep:g}s + drain_timeout "
                  f"{cfg['drain_text']} (the grace period includes the preStop hook)")
        else:
            problem(config_file, f"drain_timeout {cfg['drain_text']!r} is not a duration")

    # Resources, security.
    resources = c.get("resources") or {}
    for kind in ("requests", "limits"):
        for name in ("cpu", "memory"):
            check(name in (resources.get(kind) or {}), dpath, f"resources.{kind}.{name} is not set")
    security = c.get("securityContext") or {}
    pod_security = pod.get("securityContext") or {}
    check(security.get("readOnlyRootFilesystem") is True, dpath, "readOnlyRootFilesystem is not true")
    check(security.get("allowPrivilegeEscalation") is False, dpath, "allowPrivilegeEscalation is not false")
    check(pod_security.get("runAsNonRoot") is True or security.get("runAsNonRoot") is True, dpath,
          "runAsNonRoot is not true")
    env_from = [e.get("secretRef", {}).get("name") for e in c.get("envFrom") or [] if "secretRef" in e]
    check(bool(env_from), dpath, "no envFrom secretRef for ${ENV} secrets")

    # Service ports resolve to the container ports.
    for spath, service in [(p, d) for p, d in manifests if d.get("kind") == "Service"]:
        service_ports = {p.get("name"): p for p in service["spec"].get("ports") or []}
        for name, number in (("http", 8080), ("admin", 9090)):
            sp = service_ports.get(name)
            if check(sp is not None, spath, f"no Service port named {name}"):
                check(sp.get("port") == number, spath, f"Service port {name} must be {number}, is {sp.get('port')}")
                target = port_of(c, sp.get("targetPort", sp.get("port")))
                check(target == ports.get(name), spath,
                      f"Service port {name} targets {sp.get('targetPort')}, not container port {ports.get(name)}")
        selector = service["spec"].get("selector") or {}
        labels = (deployment["spec"]["template"].get("metadata") or {}).get("labels") or {}
        check(bool(selector) and all(labels.get(k) == v for k, v in selector.items()), spath,
              "Service selector does not match the pod template labels")

    hpas = [(p, d) for p, d in manifests if d.get("kind") == "HorizontalPodAutoscaler"]
    for hpath, hpa in hpas:
        target = hpa["spec"].get("scaleTargetRef") or {}
        check(target.get("kind") == "Deployment" and target.get("name") == deployment["metadata"]["name"], hpath,
              "HPA does not target the Deployment")
        cpu = [m for m in hpa["spec"].get("metrics") or [] if (m.get("resource") or {}).get("name") == "cpu"]
        check(bool(cpu) and cpu[0]["resource"]["target"].get("averageUtilization") == 70, hpath,
              "HPA CPU target is not 70%")
    check(bool(hpas), directory, "no HorizontalPodAutoscaler")
    pdbs = [(p, d) for p, d in manifests if d.get("kind") == "PodDisruptionBudget"]
    check(bool(pdbs) and pdbs[0][1]["spec"].get("minAvailable") == 1, directory,
          "no PodDisruptionBudget with minAvailable 1")

# The stub files under deploy/kubernetes are copies (kustomize cannot read files outside the kustomization
# directory): keep each equal to Configuration/stubs/ of the same name.
for copy in sorted(glob.glob(f"{K8S}/**/stubs/*", recursive=True)):
    original = os.path.join("Configuration/stubs", os.path.basename(copy))
    if os.path.isfile(copy) and os.path.isfile(original):
        with open(copy, "rb") as a, open(original, "rb") as b:
            check(a.read() == b.read(), copy, f"differs from {original} (copy it again)")

# ---------------------------------------------------------------------------------------------------------------------
# 3. Docker.
DOCKER = "deploy/docker"
dockerfile = f"{DOCKER}/Dockerfile"
compose_config = f"{DOCKER}/gateway.compose.yaml"
if check(os.path.isfile(dockerfile), dockerfile, "missing"):
    with open(dockerfile, encoding="utf-8") as f:
        text = f.read()
    joined = re.sub(r"\\\n", " ", text)
    lines = [l.strip() for l in joined.splitlines() if l.strip() and not l.strip().startswith("#")]
    instructions = [(l.split(None, 1)[0].upper(), l.split(None, 1)[1] if " " in l else "") for l in lines]
    expose = {int(p.split("/")[0]) for i, a in instructions if i == "EXPOSE" for p in a.split()}
    check({8080, 9090} <= expose, dockerfile, f"EXPOSE must list 8080 and 9090, lists {sorted(expose)}")
    check(("STOPSIGNAL", "SIGTERM") in instructions, dockerfile, "STOPSIGNAL SIGTERM is missing")
    check(("ENTRYPOINT", '["moya-gateway"]') in instructions, dockerfile, 'ENTRYPOINT ["moya-gateway"] is missing')
    check(("CMD", '["serve", "--config", "/etc/moya-gateway/gateway.yaml"]') in instructions, dockerfile,
          'CMD ["serve", "--config", "/etc/moya-gateway/gateway.yaml"] is missing')
    users = [a for i, a in instructions if i == "USER"]
    check(bool(users) and not users[-1].split(":")[0] in ("0", "root"), dockerfile, "the final USER is not non-root")
    health = [a for i, a in instructions if i == "HEALTHCHECK"]
    if check(bool(health), dockerfile, "no HEALTHCHECK"):
        check("/healthz" in health[0], dockerfile, "HEALTHCHECK does not request /healthz")
        m = re.search(r"\$\{MOYA_ADMIN_PORT:-(\d+)\}|/dev/tcp/[^/]+/(\d+)", health[0])
        env = dict(re.findall(r"(MOYA_ADMIN_PORT)=(\d+)", joined))
        hc_port = int(env.get("MOYA_ADMIN_PORT") or (m and (m.group(1) or m.group(2))) or 0)
        baked = gateway_config(compose_config) if os.path.isfile(compose_config) else None
        if baked:
            check(listen_port(baked["admin"]) == hc_port, dockerfile,
                  f"HEALTHCHECK probes port {hc_port}, the baked config's admin.listen is {baked['admin']}")
    # COPY sources (not --from) exist in the build context (the repository root).
    for i, a in instructions:
        if i != "COPY" or "--from=" in a:
            continue
        parts = [p for p in a.split() if not p.startswith("--")]
        for source in parts[:-1]:
            check(os.path.exists(source), dockerfile, f"COPY source {source} does not exist in the build context")
    check(os.path.isfile(f"{dockerfile}.dockerignore"), dockerfile, "Dockerfile.dockerignore is missing (.build/ would be sent)")
    # SwiftPM loads the whole manifest: every target's directory must be in the build stage before `swift build`.
    copied = []
    for i, a in instructions:
        if i == "RUN" and ("swift build" in a or "build-release.sh" in a):
            break
        if i == "COPY" and "--from=" not in a:
            copied += [os.path.normpath(p) for p in [p for p in a.split() if not p.startswith("--")][:-1]]
    with open("Package.swift", encoding="utf-8") as f:
        manifest = f.read()
    chunks = re.split(r"\.(target|executableTarget|testTarget|systemLibrary|plugin|macro)\(", manifest)
    for kind, body in zip(chunks[1::2], chunks[2::2]):
        name = re.search(r'name:\s*"([^"]+)"', body)
        path = re.search(r'path:\s*"([^"]+)"', body)
        if not name:
            continue
        directory = os.path.normpath(path.group(1) if path else
                                     os.path.join("Tests" if kind == "testTarget" else "Sources", name.group(1)))
        check(any(directory == c or directory.startswith(c + os.sep) or c == "." for c in copied), dockerfile,
              f"target {name.group(1)} ({directory}) is not copied into the build stage before `swift build`: "
              "SwiftPM will refuse the manifest")

compose = f"{DOCKER}/compose.yaml"
if check(compose in parsed and parsed[compose], compose, "missing or empty"):
    services = parsed[compose][0].get("services") or {}
    gateway = services.get("gateway")
    if check(gateway is not None, compose, "no gateway service"):
        build = gateway.get("build") or {}
        context = os.path.normpath(os.path.join(DOCKER, build.get("context", ".")))
        check(os.path.isfile(os.path.join(context, "Package.swift")), compose, "build context is not the package root")
        check(os.path.isfile(os.path.join(context, build.get("dockerfile", "Dockerfile"))), compose,
              "build dockerfile does not exist")
        mounted_config = None
        named = parsed[compose][0].get("volumes") or {}
        targets = []
        for volume in gateway.get("volumes") or []:
            source, target = str(volume).split(":")[:2]
            targets.append(target)
            if not source.startswith((".", "/")):
                check(source in named, compose, f"named volume {source} is not declared under volumes:")
                continue
            full = os.path.normpath(os.path.join(DOCKER, source))
            check(os.path.exists(full), compose, f"volume source {source} does not exist")
            if target == "/etc/moya-gateway/gateway.yaml":
                mounted_config = full
        cfg = gateway_config(mounted_config or compose_config)
        if gateway.get("read_only"):
            tmpfs = gateway.get("tmpfs") or []
            targets += [str(t).split(":")[0] for t in ([tmpfs] if isinstance(tmpfs, str) else tmpfs)]
            check(any(covers(t, cfg["temp_dir"]) for t in targets), compose,
                  f"read_only: true, and no volume or tmpfs at server.buffering.temp_dir {cfg['temp_dir']}")
        published = {}
        for port in gateway.get("ports") or []:
            fields = str(port).split(":")
            published[int(fields[-1].split("/")[0])] = port
        for address in cfg["listen"] + [cfg["admin"]]:
            check(listen_port(address) in published, compose, f"config listener {address} has no published port")
            check(listen_host(address) in ("0.0.0.0", "[::]"), mounted_config or compose_config,
                  f"listen address {address} is not reachable through a published port (use 0.0.0.0)")
        grace = duration_seconds(str(gateway.get("stop_grace_period", "10s")))
        check(grace is not None and cfg["drain"] is not None and grace > cfg["drain"], compose,
              f"stop_grace_period {gateway.get('stop_grace_period', '10s (default)')} must exceed drain_timeout "
              f"{cfg['drain_text']}")
        env_port = (gateway.get("environment") or {}).get("MOYA_ADMIN_PORT")
        if env_port is not None:
            check(int(env_port) == listen_port(cfg["admin"]), compose,
                  f"MOYA_ADMIN_PORT {env_port} does not match admin.listen {cfg['admin']}")

# ---------------------------------------------------------------------------------------------------------------------
# 4. systemd.
unit = "deploy/systemd/moya-gateway.service"
if check(os.path.isfile(unit), unit, "missing"):
    settings = {}
    with open(unit, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", ";", "[")) and "=" in line:
                key, value = line.split("=", 1)
                settings.setdefault(key, []).append(value)
    stop = settings.get("TimeoutStopSec", ["90"])[-1]
    stop_seconds = float(stop) if re.fullmatch(r"\d+", stop) else duration_seconds(stop)
    check(stop_seconds is not None and shipped_default["drain"] is not None and stop_seconds > shipped_default["drain"],
          unit, f"TimeoutStopSec {stop} must exceed drain_timeout {shipped_default['drain_text']} of "
          "Configuration/gateway.yaml")
    check(settings.get("KillSignal", ["SIGTERM"])[-1] == "SIGTERM", unit, "KillSignal is not SIGTERM")
    check("--config /etc/moya-gateway/gateway.yaml" in settings.get("ExecStart", [""])[-1], unit,
          "ExecStart does not pass --config /etc/moya-gateway/gateway.yaml")

    analyze = shutil.which("systemd-analyze")
    if not analyze:
        note("SKIPPED systemd-analyze verify: systemd-analyze is not installed (and could not be installed: not root)")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            # Can systemd-analyze verify run here at all? Try a unit that is certainly valid first.
            probe = os.path.join(tmp, "check-deploy-probe.service")
            with open(probe, "w") as f:
                f.write("[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n")
            run = subprocess.run([analyze, "verify", probe], capture_output=True, text=True)
            if run.returncode != 0:
                why = " ".join((run.stderr or run.stdout).split())[:300]
                note(f"SKIPPED systemd-analyze verify: it cannot verify even a trivial unit here ({why})")
            else:
                run = subprocess.run([analyze, "verify", unit], capture_output=True, text=True)
                messages = [l for l in (run.stderr + run.stdout).splitlines() if l.strip()]
                missing_binary = [l for l in messages if "/usr/local/bin/moya-gateway is not executable" in l]
                if run.returncode != 0 and missing_binary and len(missing_binary) == len(messages):
                    # The binary is not installed on this machine; verify the unit with the built binary in its place.
                    binary = os.path.abspath(os.environ["CHECK_DEPLOY_BIN"])
                    if not os.access(binary, os.X_OK):
                        binary = "/bin/true"
                    copy = os.path.join(tmp, "moya-gateway.service")
                    with open(unit) as f, open(copy, "w") as g:
                        g.write(f.read().replace("/usr/local/bin/moya-gateway", binary))
                    note(f"systemd-analyze verify: /usr/local/bin/moya-gateway is not installed here; verifying with "
                         f"ExecStart pointing at {binary}")
                    run = subprocess.run([analyze, "verify", copy], capture_output=True, text=True)
                    messages = [l for l in (run.stderr + run.stdout).splitlines() if l.strip()]
                check(run.returncode == 0 and not messages, unit,
                      "systemd-analyze verify: " + (" | ".join(messages) or f"exit {run.returncode}"))

    rotation = "deploy/systemd/moya-gateway.logrotate"
    logrotate = shutil.which("logrotate") or ("/usr/sbin/logrotate" if os.access("/usr/sbin/logrotate", os.X_OK) else None)
    with open(rotation) as f:
        stanza = f.read()
    check("--signal=SIGUSR1" in stanza and "moya-gateway.service" in stanza, rotation,
          "postrotate must send SIGUSR1 to moya-gateway.service (the gateway reopens its log file on it)")
    if not logrotate:
        note("SKIPPED logrotate --debug: logrotate is not installed")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run([logrotate, "--debug", "--state", os.path.join(tmp, "state"), rotation],
                                 capture_output=True, text=True)
            errors = [l for l in (run.stderr + run.stdout).splitlines() if l.startswith("error")]
            check(run.returncode == 0 and not errors, rotation, "logrotate --debug: " + (" | ".join(errors) or f"exit {run.returncode}"))

# ---------------------------------------------------------------------------------------------------------------------
# 5. moya-gateway check on every shipped configuration.
binary = os.environ["CHECK_DEPLOY_BIN"]
build_problem = os.environ.get("CHECK_DEPLOY_BUILD_PROBLEM")


def dummy_environment(path, tmp):
    """Dummy values for each ${VAR} the file references. A variable used as a directory (`${VAR}/file`) points at a
    temporary directory holding those files: a throw-away self-signed certificate and key when openssl is present."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("$${", "")
    env = {}
    for name, rest in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}(/[^\"'\s,}\]]*)?", text):
        if rest:
            directory = os.path.join(tmp, "env-" + name)
            os.makedirs(directory, exist_ok=True)
            env[name] = directory
            target = os.path.join(directory, rest.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(target):
                open(target, "w").close()
        else:
            env.setdefault(name, f"dummy-{name.lower()}")
    dirs = {v for v in env.values() if v.startswith(tmp)}
    if dirs and shutil.which("openssl"):
        key, cert = os.path.join(tmp, "dummy.key"), os.path.join(tmp, "dummy.pem")
        if not os.path.exists(cert):
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                            "-subj", "/CN=localhost", "-keyout", key, "-out", cert], capture_output=True)
        if os.path.exists(cert):
            for directory in dirs:
                for root, _, files in os.walk(directory):
                    for name in files:
                        shutil.copyfile(key if name.endswith(".key") else cert, os.path.join(root, name))
    return env


def run_check(path, display, cwd=None, tmp=None):
    env = dict(os.environ)
    env.update(dummy_environment(os.path.join(cwd or ".", path), tmp))
    run = subprocess.run([os.path.abspath(binary), "check", "--config", path], capture_output=True, text=True,
                         cwd=cwd, env=env)
    out = run.stdout.strip()
    if check(run.returncode == 0 and out.startswith("ok:"), display,
             f"moya-gateway check failed (exit {run.returncode}): "
             + " | ".join(l for l in (run.stderr + run.stdout).splitlines() if l.strip())):
        note(f"{display}: {out}")


configs = sorted(glob.glob("Configuration/*.yaml") + glob.glob("Configuration/examples/*.yaml"))
configs += sorted(p for p in glob.glob("deploy/**/gateway*.yaml", recursive=True))
if build_problem or not os.access(binary, os.X_OK):
    problem(binary, build_problem or "not executable: cannot run moya-gateway check on the configurations")
else:
    with tempfile.TemporaryDirectory() as tmp:
        for path in configs:
            if path == compose_config:
                # Checked as the image lays it out: Configuration/ with this file as gateway.yaml (Dockerfile).
                stage = os.path.join(tmp, "etc-moya-gateway")
                shutil.copytree("Configuration", stage)
                shutil.copyfile(path, os.path.join(stage, "gateway.yaml"))
                run_check("gateway.yaml", f"{path} (as /etc/moya-gateway/gateway.yaml)", cwd=stage, tmp=tmp)
            else:
                run_check(path, path, tmp=tmp)

# ---------------------------------------------------------------------------------------------------------------------
# Kubernetes API schemas (strict: unknown fields are errors).
kube_validate = os.environ.get("CHECK_DEPLOY_KUBE_VALIDATE", "")
if kube_validate:
    manifests = sorted({path for directory in glob.glob("deploy/kubernetes/**/", recursive=True)
                        for path, _ in resources_of(os.path.normpath(directory))})
    for path in manifests:
        run = subprocess.run([kube_validate, "-k", "1.30.0", "--strict", "--quiet", path], capture_output=True, text=True)
        check(run.returncode == 0, path, "Kubernetes schema validation failed: "
              + " | ".join(l for l in (run.stdout + run.stderr).splitlines() if l.strip()))
    note(f"{len(manifests)} Kubernetes manifests validated against the 1.30 schemas")
else:
    note("Kubernetes schema validation skipped (kubernetes-validate unavailable)")

# ---------------------------------------------------------------------------------------------------------------------
# The image built and run without an engine (CHECK_IMAGE=1).
image_problem = os.environ.get("CHECK_DEPLOY_IMAGE_PROBLEM", "")
check(not image_problem, "deploy/docker/verify-image.sh", image_problem)

# ---------------------------------------------------------------------------------------------------------------------
for line in problems:
    print(f"check-deploy: {line}")
if problems:
    print(f"check-deploy: FAILED, {len(problems)} problem(s) in {checks} checks")
    sys.exit(1)
print(f"check-deploy: OK, {checks} checks, {len(configs)} configurations")
PYTHON

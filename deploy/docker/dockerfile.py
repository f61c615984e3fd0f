#!/usr/bin/env python3
"""Reads deploy/docker/Dockerfile for deploy/docker/verify-image.sh, so that the verification follows the real file.

  dockerfile.py parse DOCKERFILE
      Prints bash assignments (the image's base, packages, ENV, USER, WORKDIR, EXPOSE, HEALTHCHECK, STOPSIGNAL,
      ENTRYPOINT, CMD, and the runtime stage's RUN/COPY steps) for verify-image.sh to `eval`. Any instruction this
      reader does not understand is an error, never silently skipped.
  dockerfile.py build-stage DOCKERFILE CONTEXT STAGE_ROOT
      Runs the build stage on this machine (the host stands in for the swift image): every COPY from the build context
      (with the Dockerfile's .dockerignore) into STAGE_ROOT, every RUN with `/bin/sh -c` and the stage's own absolute
      paths (/src, /out, ...) mapped into STAGE_ROOT. `RUN --mount=type=cache` targets persist under STAGE_ROOT, like
      BuildKit's cache. The stage's apt-get RUN is not executed (it would rewrite the host's apt state): its packages
      must be installed on the host (scripts/install-deps.sh), else this fails.
  dockerfile.py copy DOCKERFILE CONTEXT STAGE_ROOT ROOTFS WORKDIR ARGS
      One COPY instruction of the runtime stage (ARGS as written after COPY): from the build stage (--from=) or the
      context, into ROOTFS, owned by 0:0 unless --chown, as Docker does.

Only the Dockerfile features this project uses are supported; anything else fails loudly.
"""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys

# Top-level directories of a Debian image. A build-stage RUN that touches one of them (other than /dev/null) would act
# on the host here, so it is refused; any other top-level directory (/src, /out) belongs to the stage and is mapped.
SYSTEM_DIRS = {"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "opt", "proc",
               "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var"}
SUPPORTED = {"FROM", "ARG", "RUN", "COPY", "WORKDIR", "ENV", "USER", "EXPOSE", "HEALTHCHECK", "STOPSIGNAL",
             "ENTRYPOINT", "CMD", "LABEL"}


def fail(text):
    print(f"dockerfile.py: {text}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------------------------------------------------------------
# Reading.

def instructions(path):
    """[(KEYWORD, arguments)] with line continuations joined and comment lines dropped (as BuildKit does)."""
    with open(path, encoding="utf-8") as f:
        raw = f.read().splitlines()
    result, current = [], ""
    for line in raw:
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not current):
            continue                        # comments (also inside a continuation) and blank lines
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1]
            continue
        current += line
        keyword, _, rest = current.strip().partition(" ")
        result.append((keyword.upper(), rest.strip()))
        current = ""
    if current:
        fail(f"{path}: the last instruction ends in a line continuation")
    for keyword, _ in result:
        if keyword not in SUPPORTED:
            fail(f"{path}: instruction {keyword} is not supported by verify-image.sh (teach dockerfile.py about it)")
    return result


def expand(text, args):
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)",
                  lambda m: args.get(m.group(1) or m.group(2), m.group(0)), text)


def stages(path):
    """[{name, base, steps}] with global ARG defaults expanded in FROM."""
    global_args, result = {}, []
    for keyword, rest in instructions(path):
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(result))
            result.append({"name": name, "base": expand(words[0], global_args), "steps": []})
        elif not result:
            if keyword != "ARG":
                fail(f"{path}: {keyword} before the first FROM")
            key, _, value = rest.partition("=")
            global_args[key.strip()] = value.strip().strip('"')
        else:
            if keyword == "ARG":
                fail(f"{path}: ARG inside a stage is not supported by verify-image.sh")
            result[-1]["steps"].append((keyword, rest))
    if len(result) < 2:
        fail(f"{path}: expected a build stage and a runtime stage")
    return result


def json_or_shell(text):
    """Exec form (JSON array) -> argv; shell form -> /bin/sh -c TEXT."""
    text = text.strip()
    if text.startswith("["):
        try:
            argv = json.loads(text)
        except json.JSONDecodeError as error:
            fail(f"not a valid JSON exec form: {text!r} ({error})")
        if not all(isinstance(a, str) for a in argv):
            fail(f"exec form must be a list of strings: {text!r}")
        return argv
    return ["/bin/sh", "-c", text]


def run_flags(text):
    """`RUN --mount=... --network=... cmd` -> ([flags], cmd)."""
    flags = []
    while text.startswith("--"):
        flag, _, text = text.partition(" ")
        flags.append(flag)
        text = text.lstrip()
    return flags, text


def apt_packages(command):
    """Packages named by `apt-get install` in a shell command (None when it has no apt-get install)."""
    m = re.search(r"apt-get\s+install\s+(.*?)(?:&&|;|\||$)", command)
    if not m:
        return None
    return [w for w in m.group(1).split() if not w.startswith("-")]


def env_pairs(text):
    words = shlex.split(text)
    if words and "=" not in words[0]:
        return [(words[0], " ".join(words[1:]))]          # legacy `ENV key value`
    return [tuple(w.split("=", 1)) for w in words]


def duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not m:
        fail(f"unsupported duration {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def parse(path):
    all_stages = stages(path)
    build, runtime = all_stages[0], all_stages[-1]
    out = {}

    def put(name, value):
        if isinstance(value, list):
            out[name] = "(" + " ".join(shlex.quote(str(v)) for v in value) + ")"
        else:
            out[name] = shlex.quote(str(value))

    put("DF_BUILD_NAME", build["name"])
    put("DF_BUILD_BASE", build["base"])
    put("DF_RUNTIME_BASE", runtime["base"])
    for stage, prefix in ((build, "DF_BUILD"), (runtime, "DF_RUNTIME")):
        lists = [apt_packages(run_flags(a)[1]) for k, a in stage["steps"] if k == "RUN"]
        lists = [p for p in lists if p is not None]
        if len(lists) != 1:
            fail(f"{path}: stage {stage['name']}: expected exactly one RUN with apt-get install, found {len(lists)}")
        put(f"{prefix}_PACKAGES", lists[0])

    # Runtime stage: filesystem steps in order, and the image configuration (last one wins, as in Docker).
    kinds, texts, workdirs, env = [], [], [], []
    user, workdir, expose = "", "/", []
    health, stopsignal, entrypoint, cmd = None, "SIGTERM", [], []
    for keyword, rest in runtime["steps"]:
        if keyword in ("RUN", "COPY"):
            if keyword == "RUN":
                flags, _ = run_flags(rest)
                if flags:
                    fail(f"{path}: runtime RUN flags {flags} are not supported by verify-image.sh")
                if user:
                    fail(f"{path}: a runtime RUN after USER is not supported by verify-image.sh")
            kinds.append(keyword)
            texts.append(rest)
            workdirs.append(workdir)
        elif keyword == "ENV":
            for key, value in env_pairs(rest):
                env = [e for e in env if not e.startswith(key + "=")] + [f"{key}={value}"]
        elif keyword == "USER":
            user = rest
        elif keyword == "WORKDIR":
            workdir = os.path.normpath(os.path.join(workdir, rest))
        elif keyword == "EXPOSE":
            expose += [p.split("/")[0] for p in rest.split()]
        elif keyword == "HEALTHCHECK":
            health = rest
        elif keyword == "STOPSIGNAL":
            stopsignal = rest
        elif keyword == "ENTRYPOINT":
            entrypoint = json_or_shell(rest)
            cmd = []                                   # Docker resets CMD when ENTRYPOINT is set
        elif keyword == "CMD":
            cmd = json_or_shell(rest)
    put("DF_RUNTIME_STEP_KINDS", kinds)
    put("DF_RUNTIME_STEP_TEXTS", texts)
    put("DF_RUNTIME_STEP_WORKDIRS", workdirs)
    put("DF_ENV", env)
    put("DF_USER", user)
    put("DF_WORKDIR", workdir)
    put("DF_EXPOSE", expose)
    put("DF_STOPSIGNAL", stopsignal)
    put("DF_ENTRYPOINT", entrypoint)
    put("DF_CMD", cmd)
    if health is None or health.upper() == "NONE":
        fail(f"{path}: no HEALTHCHECK")
    options = {"interval": "30s", "timeout": "30s", "start-period": "0s", "retries": "3"}
    while health.startswith("--"):
        option, _, health = health.partition(" ")
        key, _, value = option[2:].partition("=")
        if key not in options and key != "start-interval":
            fail(f"{path}: HEALTHCHECK option --{key} is not supported")
        options[key] = value
        health = health.lstrip()
    keyword, _, health = health.partition(" ")
    if keyword.upper() != "CMD":
        fail(f"{path}: HEALTHCHECK without CMD")
    put("DF_HC_ARGV", json_or_shell(health))
    put("DF_HC_INTERVAL", duration(options["interval"]))
    put("DF_HC_TIMEOUT", duration(options["timeout"]))
    put("DF_HC_START_PERIOD", duration(options["start-period"]))
    put("DF_HC_RETRIES", int(options["retries"]))
    for name, value in out.items():
        print(f"{name}={value}")


# ---------------------------------------------------------------------------------------------------------------------
# .dockerignore and COPY.

def ignore_patterns(dockerfile, context):
    """BuildKit reads <Dockerfile>.dockerignore next to the Dockerfile first, then <context>/.dockerignore."""
    for candidate in (dockerfile + ".dockerignore", os.path.join(context, ".dockerignore")):
        if os.path.isfile(candidate):
            patterns = []
            with open(candidate, encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    negate = line.startswith("!")
                    line = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
                    regex = ""
                    i = 0
                    while i < len(line):
                        if line.startswith("**/", i):
                            regex, i = regex + "(?:.*/)?", i + 3
                        elif line.startswith("**", i):
                            regex, i = regex + ".*", i + 2
                        elif line[i] == "*":
                            regex, i = regex + "[^/]*", i + 1
                        elif line[i] == "?":
                            regex, i = regex + "[^/]", i + 1
                        else:
                            regex, i = regex + re.escape(line[i]), i + 1
                    patterns.append((negate, re.compile(regex + r"\Z")))
            return patterns
    return []


def ignored(relpath, patterns):
    """Excluded when the last pattern matching the path or one of its parents is not a `!` exception."""
    parts = relpath.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for negate, regex in patterns:
        if any(regex.match(p) for p in prefixes):
            result = not negate
    return result


def copy_plan(sources, dest, src_root, patterns, workdir):
    """[(source file or dir, destination path)] for one COPY. Directories are copied by their contents."""
    dest_abs = dest if dest.startswith("/") else os.path.join(workdir, dest)
    plan = []
    for source in sources:
        full = os.path.normpath(os.path.join(src_root, source.lstrip("/")))
        if not os.path.exists(full):
            fail(f"COPY source {source} does not exist ({full})")
        if os.path.isdir(full):
            for directory, dirs, files in os.walk(full):
                rel_dir = os.path.relpath(directory, full)
                dirs[:] = sorted(d for d in dirs
                                 if not ignored(os.path.relpath(os.path.join(directory, d), src_root), patterns))
                target_dir = os.path.normpath(os.path.join(dest_abs, rel_dir))
                plan.append((directory, target_dir))
                for name in sorted(files):
                    path = os.path.join(directory, name)
                    if not ignored(os.path.relpath(path, src_root), patterns):
                        plan.append((path, os.path.join(target_dir, name)))
        else:
            if ignored(os.path.relpath(full, src_root), patterns):
                fail(f"COPY source {source} is excluded by .dockerignore")
            target = os.path.join(dest_abs, os.path.basename(full)) if dest.endswith("/") or len(sources) > 1 \
                else dest_abs
            plan.append((full, os.path.normpath(target)))
    return plan


def apply_plan(plan, root, owner=None):
    """Copies files whose size or mtime differ (unchanged files keep their inode: SwiftPM's incremental build relies
    on it), creates directories 0755 as Docker does, and sets the owner when given."""
    for source, target in plan:
        dest = os.path.join(root, target.lstrip("/"))
        if os.path.isdir(source):
            if not os.path.isdir(dest):
                os.makedirs(dest, mode=0o755)
        else:
            os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
            st = os.stat(source)
            try:
                dt = os.lstat(dest)
                same = dt.st_size == st.st_size and int(dt.st_mtime) == int(st.st_mtime) and owner is None
            except FileNotFoundError:
                same = False
            if not same:
                if os.path.lexists(dest):
                    os.unlink(dest)
                shutil.copy2(source, dest, follow_symlinks=False)
        if owner is not None:
            os.lchown(dest, owner[0], owner[1])


def parse_copy(text):
    flags, words = {}, shlex.split(text) if not text.strip().startswith("[") else json.loads(text)
    while words and words[0].startswith("--"):
        key, _, value = words.pop(0)[2:].partition("=")
        flags[key] = value
    for key in flags:
        if key not in ("from", "chown", "link"):
            fail(f"COPY --{key} is not supported by verify-image.sh")
    if len(words) < 2:
        fail(f"COPY needs a source and a destination: {text!r}")
    return flags, words[:-1], words[-1]


# ---------------------------------------------------------------------------------------------------------------------
# Build stage.

def map_paths(command, stage_root):
    """Maps the stage's own absolute paths into stage_root; refuses host system paths (they would act on the host)."""
    def replace(m):
        top = m.group(2)
        if top in SYSTEM_DIRS:
            if m.group(1) == "/dev/null":
                return m.group(1)
            fail(f"build-stage RUN uses {m.group(1)}: a system path that would act on the host here; "
                 f"verify-image.sh cannot run it (command: {command})")
        return stage_root + m.group(1)
    return re.sub(r"(?:^|(?<=[\s\"'=:]))(/([A-Za-z0-9_.+-]+)(?:/[^\s\"';&|)]*)?)", replace, command)


def build_stage(dockerfile, context, stage_root):
    if " " in stage_root or not stage_root.startswith("/"):
        fail(f"stage root must be an absolute path without spaces: {stage_root!r}")
    build = stages(dockerfile)[0]
    patterns = ignore_patterns(dockerfile, context)
    workdir = "/"
    caches = []
    for keyword, rest in build["steps"]:
        if keyword == "RUN":
            caches += [dict(kv.split("=", 1) for kv in f.split("=", 1)[1].split(","))["target"]
                       for f in run_flags(rest)[0] if f.startswith("--mount=") and "type=cache" in f]

    # A fresh stage: everything but the cache-mount targets and the files COPY will write (compared by size and
    # mtime, so unchanged sources keep their inodes and SwiftPM rebuilds only what changed).
    keep = set()
    for keyword, rest in build["steps"]:
        if keyword == "WORKDIR":
            workdir = os.path.normpath(os.path.join(workdir, rest))
        elif keyword == "COPY":
            flags, sources, dest = parse_copy(rest)
            if "from" in flags:
                fail("COPY --from in the build stage is not supported by verify-image.sh")
            keep |= {os.path.join(stage_root, t.lstrip("/"))
                     for _, t in copy_plan(sources, dest, context, patterns, workdir)}
    cache_paths = {os.path.join(stage_root, c.lstrip("/")) for c in caches}
    if os.path.isdir(stage_root):
        for directory, dirs, files in os.walk(stage_root, topdown=True):
            dirs[:] = [d for d in dirs if os.path.join(directory, d) not in cache_paths]
            for name in files:
                path = os.path.join(directory, name)
                if path not in keep:
                    os.unlink(path)
            for name in list(dirs):
                path = os.path.join(directory, name)
                if os.path.islink(path) and path not in keep:
                    os.unlink(path)
                    dirs.remove(name)
        for directory, dirs, files in os.walk(stage_root, topdown=False):
            if directory != stage_root and not os.listdir(directory) and directory not in keep \
                    and directory not in cache_paths:
                os.rmdir(directory)
    os.makedirs(stage_root, exist_ok=True)

    workdir = "/"
    for keyword, rest in build["steps"]:
        if keyword == "WORKDIR":
            workdir = os.path.normpath(os.path.join(workdir, rest))
            os.makedirs(os.path.join(stage_root, workdir.lstrip("/")), exist_ok=True)
            print(f"  WORKDIR {workdir}", flush=True)
        elif keyword == "COPY":
            flags, sources, dest = parse_copy(rest)
            plan = copy_plan(sources, dest, context, patterns, workdir)
            apply_plan(plan, stage_root)
            print(f"  COPY {rest}   ({sum(1 for s, _ in plan if not os.path.isdir(s))} files)", flush=True)
        elif keyword == "RUN":
            flags, command = run_flags(rest)
            packages = apt_packages(command)
            if packages is not None:
                missing = [p for p in packages if subprocess.run(
                    ["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True).stdout
                    != "install ok installed"]
                if missing:
                    fail(f"build-stage packages missing on this host: {' '.join(missing)} "
                         "(scripts/install-deps.sh installs them)")
                print(f"  RUN apt-get install {' '.join(packages)}: not run here; all installed on this host",
                      flush=True)
                continue
            for flag in flags:
                if not (flag.startswith("--mount=") and "type=cache" in flag):
                    fail(f"RUN flag {flag} is not supported by verify-image.sh")
            mapped = map_paths(command, stage_root)
            print(f"  RUN {command}", flush=True)
            cwd = os.path.join(stage_root, workdir.lstrip("/"))
            process = subprocess.Popen(["/bin/sh", "-c", mapped], cwd=cwd, start_new_session=True)
            try:
                status = process.wait()
            except BaseException:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait()
                raise
            if status != 0:
                fail(f"build-stage RUN failed (exit {status}): {command}")
        elif keyword in ("ENV", "LABEL"):
            fail(f"{keyword} in the build stage is not supported by verify-image.sh")
        else:
            fail(f"{keyword} in the build stage is not supported by verify-image.sh")


def copy_runtime(dockerfile, context, stage_root, rootfs, workdir, text):
    flags, sources, dest = parse_copy(text)
    build_name = stages(dockerfile)[0]["name"]
    if "from" in flags:
        if flags["from"] != build_name:
            fail(f"COPY --from={flags['from']}: only --from={build_name} (the build stage) is supported")
        src_root, patterns = stage_root, []
    else:
        src_root, patterns = context, ignore_patterns(dockerfile, context)
    owner = (0, 0)
    if flags.get("chown"):
        user, _, group = flags["chown"].partition(":")
        if not user.isdigit() or (group and not group.isdigit()):
            fail("COPY --chown with names is not supported by verify-image.sh (use numeric ids)")
        owner = (int(user), int(group or user))
    plan = copy_plan(sources, dest, src_root, patterns, workdir)
    apply_plan(plan, rootfs, owner)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))     # so that a build's process group is killed too
    if len(sys.argv) < 3:
        fail(__doc__)
    command = sys.argv[1]
    if command == "parse" and len(sys.argv) == 3:
        parse(sys.argv[2])
    elif command == "build-stage" and len(sys.argv) == 5:
        build_stage(sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4]))
    elif command == "copy" and len(sys.argv) == 8:
        copy_runtime(sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4]), os.path.abspath(sys.argv[5]),
                     sys.argv[6], sys.argv[7])
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()

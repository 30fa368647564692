"""The checks of scripts/check-deploy that need a YAML parser: run by that script, after it has
rendered the overlays into the folder given as the only argument."""
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
RENDERED = Path(sys.argv[1])
KUBERNETES_VERSION = "1.29.0"
failures: list[str] = []


def fail(where: str, what: str) -> None:
    failures.append(f"{where}: {what}")


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# ---- Kubernetes: schemas -------------------------------------------------------------------
keda = json.loads((ROOT / "scripts/deploy-schemas/keda.json").read_text())
for overlay in ("dev", "prod"):
    rendered = RENDERED / f"{overlay}.yaml"
    result = subprocess.run(["kubernetes-validate", "--strict", "-k", KUBERNETES_VERSION, str(rendered)],
                            capture_output=True, text=True)
    for line in (result.stdout + result.stderr).splitlines():
        if line.startswith("INFO"):
            continue
        # Custom resources have no schema there; they are checked against ours below.
        if line.startswith("WARN") and "keda.sh/v1alpha1" in line:
            continue
        fail(f"k8s/overlays/{overlay}", line)
    if result.returncode != 0 and not failures:
        fail(f"k8s/overlays/{overlay}", f"kubernetes-validate exited {result.returncode}")
    objects = documents(rendered)
    kinds = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    validated = sum(1 for o in objects if o["apiVersion"] != "keda.sh/v1alpha1")
    for o in objects:
        if o["apiVersion"] == "keda.sh/v1alpha1":
            try:
                jsonschema.validate(o, {**keda, "$ref": f"#/$defs/{o['kind']}"})
            except jsonschema.ValidationError as error:
                fail(f"k8s/overlays/{overlay} {o['kind']}/{o['metadata']['name']}", error.message)
    print(f"check-deploy: k8s/overlays/{overlay}: {len(objects)} objects, {validated} against Kubernetes "
          f"{KUBERNETES_VERSION} (strict), {len(objects) - validated} against the KEDA schema")

    # ---- Kubernetes: the rules Moments' pods keep ---------------------------------------------
    config = kinds[("ConfigMap", "moments-config")]["data"]
    for (kind, name), o in kinds.items():
        if kind not in ("Deployment", "Job") or not name.startswith("moments"):
            continue
        where = f"k8s/overlays/{overlay} {kind}/{name}"
        pod = o["spec"]["template"]["spec"]
        security = pod.get("securityContext", {})
        if not security.get("runAsNonRoot") or security.get("runAsUser", 0) == 0:
            fail(where, "the pod must run as a non-root user")
        if pod.get("automountServiceAccountToken") is not False:
            fail(where, "no service account token is needed")
        for container in pod["containers"]:
            context = container.get("securityContext", {})
            if not context.get("readOnlyRootFilesystem"):
                fail(where, f"{container['name']}: the root filesystem must be read-only")
            if context.get("allowPrivilegeEscalation") is not False:
                fail(where, f"{container['name']}: privilege escalation must be off")
            if context.get("capabilities", {}).get("drop") != ["ALL"]:
                fail(where, f"{container['name']}: every capability must be dropped")
            if "memory" not in container.get("resources", {}).get("limits", {}):
                fail(where, f"{container['name']}: a memory limit is needed")
            if kind == "Deployment" and not ("livenessProbe" in container and ("readinessProbe" in container or name.endswith("worker"))):
                fail(where, f"{container['name']}: probes are missing")
            mounts = {m["name"] for m in container.get("volumeMounts", [])}
            for volume in pod.get("volumes", []):
                if "emptyDir" in volume and volume["name"] in mounts and "sizeLimit" not in volume["emptyDir"]:
                    fail(where, f"emptyDir {volume['name']} needs a sizeLimit")
            if kind == "Deployment" and "/var/lib/moments/work" not in {m["mountPath"] for m in container.get("volumeMounts", [])}:
                fail(where, "the work folder must be a writable volume (the root filesystem is read-only)")
    # A Job's pod template cannot change: one with a fixed name makes the next `kubectl apply`
    # with a new image fail ("field is immutable") until it is deleted. Migrations run at start-up.
    for (kind, name), o in kinds.items():
        if kind == "Job" and "generateName" not in o["metadata"]:
            fail(f"k8s/overlays/{overlay} Job/{name}", "a Job with a fixed name cannot be applied again with a new image")
    worker = kinds[("Deployment", "moments-worker")]["spec"]["template"]["spec"]
    grace = int(config.get("WORKER_SHUTDOWN_GRACE_SECONDS", "25"))
    if worker.get("terminationGracePeriodSeconds", 30) <= grace + 10:
        fail(f"k8s/overlays/{overlay}", f"the worker's terminationGracePeriodSeconds must exceed "
                                        f"WORKER_SHUTDOWN_GRACE_SECONDS ({grace}) with time to hand the job back")
    scaled = kinds[("ScaledObject", "moments-worker")]
    prefix = config.get("MOMENTS_QUEUE_PREFIX", "moments")
    if scaled["spec"]["scaleTargetRef"]["name"] != "moments-worker":
        fail(f"k8s/overlays/{overlay}", "the ScaledObject must scale the worker Deployment")
    for trigger in scaled["spec"]["triggers"]:
        if trigger["type"] == "redis-streams" and trigger["metadata"]["stream"] != f"{prefix}:jobs":
            fail(f"k8s/overlays/{overlay}", f"KEDA watches {trigger['metadata']['stream']}, but the queue is {prefix}:jobs")
        name = trigger.get("authenticationRef", {}).get("name")
        if name and ("TriggerAuthentication", name) not in kinds:
            fail(f"k8s/overlays/{overlay}", f"the trigger names TriggerAuthentication {name}, which is not there")
    if not any(t["type"] == "redis-streams" and "lagCount" in t["metadata"] for t in scaled["spec"]["triggers"]) \
            and scaled["spec"].get("minReplicaCount", 1) == 0:
        fail(f"k8s/overlays/{overlay}", "scaling to zero needs a lagCount trigger to wake the workers")
    if overlay == "dev" and ("Secret", "moments-secrets") not in kinds:
        fail("k8s/overlays/dev", "the dev overlay generates its Secret")

# The Secret template names every key the manifests expect.
template = yaml.safe_load((ROOT / "k8s/base/secret.template.yaml").read_text())
needed = {ref["key"] for o in documents(RENDERED / "prod.yaml") if o["kind"] == "TriggerAuthentication"
          for ref in o["spec"]["secretTargetRef"]}
for key in needed - set(template["stringData"]):
    fail("k8s/base/secret.template.yaml", f"{key} is used by a TriggerAuthentication but missing")

# ---- .env.example names every setting the code reads ---------------------------------------
example = {line.split("=", 1)[0] for line in (ROOT / ".env.example").read_text().splitlines()
           if re.match(r"^[A-Z][A-Z0-9_]*=", line)}
read = set()
for source in (ROOT / "Sources").rglob("*.swift"):
    text = source.read_text()
    # (The formatter may break a call's arguments onto the next lines.)
    read |= set(re.findall(r'environment\[\s*"([A-Z][A-Z0-9_]+)"\s*\]', text))
    read |= set(re.findall(r'Setting\.(?:integer|boolean)\(\s*"([A-Z][A-Z0-9_]+)"', text))
    read |= set(re.findall(r'required\(\s*"([A-Z][A-Z0-9_]+)"\s*\)', text))
    # The OpenTelemetry variables Moments itself looks at (the rest go to swift-otel as they are).
    read |= set(re.findall(r'variables\["(OTEL_[A-Z0-9_]+)"\]', text))
read = {name for name in read if not name.startswith(("MOMENTS_DEBUG_", "XDG_"))}
for name in sorted(read - example):
    fail(".env.example", f"{name} is read by the code but not listed")
for name in sorted(example - read):
    fail(".env.example", f"{name} is listed but the code never reads it")
print(f"check-deploy: .env.example lists all {len(read)} settings the code reads")

# ---- docker-compose.yml ---------------------------------------------------------------------
compose = yaml.safe_load((ROOT / "deploy/docker-compose.yml").read_text())
services = compose.get("services", {})
for name in ("postgres", "redis", "s3", "migrate", "api", "worker"):
    if name not in services:
        fail("deploy/docker-compose.yml", f"service {name} is missing")
for name, service in services.items():
    if "image" not in service and "build" not in service:
        fail("deploy/docker-compose.yml", f"{name} has neither image nor build")
    for dependency in (service.get("depends_on") or {}):
        if dependency not in services:
            fail("deploy/docker-compose.yml", f"{name} depends on unknown service {dependency}")
    for volume in service.get("volumes", []):
        source = volume.split(":", 1)[0]
        if not source.startswith(".") and source not in (compose.get("volumes") or {}):
            fail("deploy/docker-compose.yml", f"{name} mounts undeclared volume {source}")
        if source.startswith(".") and not (ROOT / "deploy" / source).exists():
            fail("deploy/docker-compose.yml", f"{name} mounts {source}, which does not exist")
for role in ("migrate", "api", "worker"):
    environment = services.get(role, {}).get("environment", {})
    for key in ("DATABASE_URL", "REDIS_URL", "STORAGE_URL"):
        if key not in environment:
            fail("deploy/docker-compose.yml", f"{role} lacks {key}")
    if services.get(role, {}).get("command", [None])[:2] != ["moments", role]:
        fail("deploy/docker-compose.yml", f"{role} must run `moments {role}`")
if services.get("worker", {}).get("deploy", {}).get("replicas") != 2:
    fail("deploy/docker-compose.yml", "two workers are expected")
print(f"check-deploy: deploy/docker-compose.yml: {len(services)} services")

# ---- render.yaml ----------------------------------------------------------------------------
blueprint = yaml.safe_load((ROOT / "deploy/render.yaml").read_text())
groups = {g["name"] for g in blueprint.get("envVarGroups", [])}
databases = {d["name"] for d in blueprint.get("databases", [])}
render_services = {s["name"]: s for s in blueprint.get("services", [])}
types = {s["type"] for s in render_services.values()}
for needed_type in ("web", "worker", "keyvalue"):
    if needed_type not in types:
        fail("deploy/render.yaml", f"no {needed_type} service")
for name, service in render_services.items():
    if service["type"] in ("web", "worker"):
        if service.get("runtime") != "docker" or not (ROOT / service.get("dockerfilePath", "")).is_file():
            fail("deploy/render.yaml", f"{name}: runtime docker with an existing dockerfilePath")
        if not service.get("dockerCommand", "").startswith("moments "):
            fail("deploy/render.yaml", f"{name}: dockerCommand must run moments")
    if service["type"] == "web" and (service.get("healthCheckPath") != "/health" or service.get("preDeployCommand") != "moments migrate"):
        fail("deploy/render.yaml", f"{name}: health check path and pre-deploy migrations")
    if service["type"] == "keyvalue" and ("ipAllowList" not in service or service.get("maxmemoryPolicy") != "noeviction"):
        fail("deploy/render.yaml", f"{name}: Key Value needs ipAllowList and noeviction (it holds the queue)")
    for variable in service.get("envVars", []):
        if "fromGroup" in variable and variable["fromGroup"] not in groups:
            fail("deploy/render.yaml", f"{name} uses unknown group {variable['fromGroup']}")
        if "fromDatabase" in variable and variable["fromDatabase"]["name"] not in databases:
            fail("deploy/render.yaml", f"{name} uses unknown database {variable['fromDatabase']['name']}")
        if "fromService" in variable and variable["fromService"]["name"] not in render_services:
            fail("deploy/render.yaml", f"{name} uses unknown service {variable['fromService']['name']}")
        if "key" in variable and variable["key"] not in read:
            fail("deploy/render.yaml", f"{name} sets {variable['key']}, which Moments does not read")
for group in blueprint.get("envVarGroups", []):
    for variable in group["envVars"]:
        if variable["key"] not in read:
            fail("deploy/render.yaml", f"group {group['name']} sets {variable['key']}, which Moments does not read")
print(f"check-deploy: deploy/render.yaml: {len(render_services)} services, {len(databases)} database, {len(groups)} group")

# ---- Railway --------------------------------------------------------------------------------
for role in ("api", "worker"):
    path = ROOT / f"deploy/railway/{role}.json"
    config = json.loads(path.read_text())
    build, deploy = config.get("build", {}), config.get("deploy", {})
    unknown = set(config) - {"$schema", "build", "deploy"}
    if unknown:
        fail(str(path.relative_to(ROOT)), f"unknown sections {sorted(unknown)}")
    if build.get("builder") != "DOCKERFILE" or not (ROOT / build.get("dockerfilePath", "")).is_file():
        fail(str(path.relative_to(ROOT)), "builds with the Dockerfile")
    if deploy.get("startCommand") != f"moments {role}":
        fail(str(path.relative_to(ROOT)), f"starts `moments {role}`")
    if role == "api" and deploy.get("healthcheckPath") != "/health":
        fail(str(path.relative_to(ROOT)), "the API's health check is /health")
    if deploy.get("restartPolicyType") not in ("ON_FAILURE", "ALWAYS", "NEVER"):
        fail(str(path.relative_to(ROOT)), "restartPolicyType")
print("check-deploy: deploy/railway: api.json, worker.json")

# ---- Monitoring: the dashboard's and the alerts' metrics exist ------------------------------
emitted: set[str] = set()
for source in (ROOT / "Sources").rglob("*.swift"):
    text = source.read_text()
    emitted.update(re.findall(r'name: "(moments_[a-z_]+)"', text))
    # Metrics renamed on their way to the registry (HTTPMetrics: "hb.requests": "moments_http_requests_total").
    emitted.update(re.findall(r'"[a-z.]+": "(moments_[a-z_]+)"', text))
    for metric, unit in re.findall(r'namespace: "moments",\s*metricName: "([a-z_]+)",\s*unitName: "([a-z_]+)"', text):
        emitted.add(f"moments_{metric}_{unit}")


def unknown_metrics(expression: str) -> list[str]:
    names = re.findall(r"\b(moments_[a-z_]+)", expression)
    def known(name: str) -> bool:
        return name in emitted or any(name.endswith(s) and name[: -len(s)] in emitted for s in ("_bucket", "_sum", "_count"))
    return [n for n in names if not known(n)]


dashboard = json.loads((ROOT / "deploy/monitoring/grafana-dashboard.json").read_text())
queries = [(p["title"], t["expr"]) for p in dashboard.get("panels", []) for t in p.get("targets", [])]
if not queries:
    fail("deploy/monitoring/grafana-dashboard.json", "has no panel queries")
for title, expression in queries:
    for name in unknown_metrics(expression):
        fail("deploy/monitoring/grafana-dashboard.json", f"panel '{title}' queries {name}, which no code emits")
rules = yaml.safe_load((ROOT / "deploy/monitoring/alerts.yml").read_text())
alerts = [r for g in rules["groups"] for r in g["rules"]]
for rule in alerts:
    for name in unknown_metrics(rule["expr"]):
        fail("deploy/monitoring/alerts.yml", f"alert {rule['alert']} uses {name}, which no code emits")
print(f"check-deploy: deploy/monitoring: {len(queries)} dashboard queries and {len(alerts)} alerts name only the "
      f"{len(emitted)} metrics the code emits")

if failures:
    print("check-deploy: FAILED", file=sys.stderr)
    for failure in failures:
        print(f"  {failure}", file=sys.stderr)
    sys.exit(1)
print("check-deploy: all deployment files pass")

"""Config keys a deploy changed, read from both versions of each file (full paths) or, failing that, from the hunk."""

from __future__ import annotations

import pytest

from tools.analysis.configdiff import (
    FileVersions,
    file_key_changes,
    key_changes_from_diff,
    key_changes_from_versions,
)
from tools.analysis.configtree import ConfigParseError, flat_keys

SPRING = """\
server:
  port: 8080
spring:
  application:
    name: order
  jpa:
    open-in-view: false
  datasource:
    url: jdbc:postgresql://db/order
    username: order
    hikari:
      connection-timeout: 30000
      idle-timeout: 600000
      minimum-idle: 2
      maximum-pool-size: 20
      pool-name: HikariPool-1
"""
HUNK = """\
diff --git a/application.yaml b/application.yaml
--- a/application.yaml
+++ b/application.yaml
@@ -12,5 +12,5 @@ spring:
       connection-timeout: 30000
       idle-timeout: 600000
       minimum-idle: 2
-      maximum-pool-size: 20
+      maximum-pool-size: 4
       pool-name: HikariPool-1
"""


def test_the_full_yaml_path_comes_from_both_versions_even_when_the_parent_is_outside_the_hunk():
    new = SPRING.replace("maximum-pool-size: 20", "maximum-pool-size: 4")
    [change] = file_key_changes(FileVersions("application.yaml", SPRING, new))
    assert (change.key, change.old, change.new) == ("spring.datasource.hikari.maximum-pool-size", "20", "4")
    [from_hunk] = key_changes_from_diff(HUNK)  # the hunk alone: only the enclosing line git names, not the path
    assert from_hunk.key == "spring.maximum-pool-size"


def test_yaml_scalars_keep_the_text_they_were_written_with():
    keys = flat_keys("values.yaml", "image:\n  tag: 1.10\nflags:\n  enabled: on\n  ratio: 0.50\nempty:\n")
    assert keys == {"image.tag": "1.10", "flags.enabled": "on", "flags.ratio": "0.50", "empty": "null"}


def test_kubernetes_lists_read_as_the_hunk_reader_names_them():
    manifest = """\
spec:
  template:
    spec:
      containers:
        - name: app
          image: registry/order:v1.2.3
          args: ["--max-conns=100", "--verbose"]
          env:
            - name: FEATURE_X
              value: "true"
            - name: DB_PASSWORD
              valueFrom: {secretKeyRef: {name: db, key: password}}
"""
    assert flat_keys("deployment.yaml", manifest) == {
        "spec.template.spec.containers[app].image": "registry/order:v1.2.3",
        "flag --max-conns": "100",
        "flag --verbose": "(set)",
        "env FEATURE_X": "true",
        "env DB_PASSWORD.valueFrom.secretKeyRef.name": "db",
        "env DB_PASSWORD.valueFrom.secretKeyRef.key": "password",
    }


def test_several_yaml_documents_are_named_by_kind_and_name():
    text = (
        "kind: Deployment\nmetadata: {name: order}\nspec: {replicas: 3}\n---\nkind: Service\nmetadata: {name: order}\n"
    )
    keys = flat_keys("all.yaml", text)
    assert keys["Deployment/order.spec.replicas"] == "3" and "Service/order.kind" in keys


@pytest.mark.parametrize(
    ("path", "old", "new", "key"),
    [
        ("app.json", '{"db": {"pool": {"max": 20}}}', '{"db": {"pool": {"max": 4}}}', "db.pool.max"),
        ("app.toml", "[db.pool]\nmax = 20\n", "[db.pool]\nmax = 4\n", "db.pool.max"),
        ("app.properties", "db.pool.max=20\n# note\n", "db.pool.max=4\n# note\n", "db.pool.max"),
        (".env", "export DB_POOL_MAX=20\n", "export DB_POOL_MAX=4\n", "DB_POOL_MAX"),
    ],
)
def test_json_toml_properties_and_env_files_are_read_whole(path, old, new, key):
    assert [(c.key, c.old, c.new) for c in file_key_changes(FileVersions(path, old, new))] == [(key, "20", "4")]


def test_a_new_file_shows_every_key_as_added():
    changes = file_key_changes(FileVersions("values.yaml", None, "a: 1\nb:\n  c: 2\n"))
    assert [(c.key, c.old, c.new) for c in changes] == [("a", "(absent)", "1"), ("b.c", "(absent)", "2")]


def test_a_file_that_does_not_parse_falls_back_to_its_hunks_and_says_so():
    template = "spec:\n  replicas: {{ .Values.replicas }}\n  pool: 20\n"
    diff = HUNK.replace("application.yaml", "templates/deployment.yaml")
    with pytest.raises(ConfigParseError):
        flat_keys("templates/deployment.yaml", template)
    changes, notes = key_changes_from_versions(
        [FileVersions("templates/deployment.yaml", template, template.replace("20", "4"))], diff
    )
    assert [c.key for c in changes] == ["spring.maximum-pool-size"]
    assert notes[0].startswith("templates/deployment.yaml: keys read from the diff's hunks, not the whole file")
    assert "may lack a parent key" in notes[-1]


def test_a_config_file_whose_versions_were_not_read_is_named():
    changes, notes = key_changes_from_versions([], HUNK)
    assert [c.key for c in changes] == ["spring.maximum-pool-size"]
    assert "application.yaml: keys read from the diff's hunks (the file's versions were not read)" in notes


def test_the_hunks_are_asked_for_only_when_a_file_needs_them():
    asked: list[list[str]] = []

    def hunks(paths: list[str]) -> str:
        asked.append(paths)
        return ""

    new = SPRING.replace("20", "4")
    changes, notes = key_changes_from_versions([FileVersions("application.yaml", SPRING, new)], hunks)
    assert asked == [] and notes == [] and len(changes) == 1

"""What people write in deploy diffs, read as the change they meant: env vars, flags, properties, migrations."""

from __future__ import annotations

from tools.analysis.configdiff import key_changes_from_diff, risky_lines_from_diff

DEPLOYMENT = """diff --git a/services/order/deployment.yaml b/services/order/deployment.yaml
--- a/services/order/deployment.yaml
+++ b/services/order/deployment.yaml
@@ -14,11 +14,11 @@ spec:
       containers:
         - name: order
-          image: registry/order:v2.8.0
+          image: registry/order:v2.8.1
           env:
             - name: FEATURE_X
-              value: "false"
+              value: "true"
             - name: DB_POOL
               value: "50"
             - name: RETRY_LIMIT
-              value: "3"
+              value: "0"
           args:
-            - --cache-ttl=300s
+            - --cache-ttl=0s
"""


def test_an_env_var_in_a_deployment_reads_as_env_name_not_spec_value():
    changes = {c.key: (c.old, c.new) for c in key_changes_from_diff(DEPLOYMENT)}
    assert changes["env FEATURE_X"] == ("false", "true")
    assert changes["env RETRY_LIMIT"] == ("3", "0")
    assert "env DB_POOL" not in changes and not any(key.endswith(".value") for key in changes)


def test_a_container_flag_and_image_keep_their_names_and_the_image_sorts_last():
    changes = key_changes_from_diff(DEPLOYMENT)
    by_key = {c.key: (c.old, c.new) for c in changes}
    assert by_key["flag --cache-ttl"] == ("300s", "0s")
    assert by_key["spec.containers[order].image"] == ("registry/order:v2.8.0", "registry/order:v2.8.1")
    assert changes[-1].key == "spec.containers[order].image"


def test_a_properties_file_gives_its_keys():
    diff = """--- a/services/payment/application.properties
+++ b/services/payment/application.properties
@@ -3,3 +3,3 @@
 server.port=8080
-payment.provider.timeout-ms=2000
+payment.provider.timeout-ms=200
! a comment
"""
    [change] = key_changes_from_diff(diff)
    assert (change.key, change.old, change.new) == ("payment.provider.timeout-ms", "2000", "200")
    assert change.path == "services/payment/application.properties"


def test_a_sql_migration_gives_the_statements_it_adds():
    diff = """--- /dev/null
+++ b/services/order/db/V42__orders_index.sql
@@ -0,0 +1,5 @@
+-- speed up the history page
+ALTER TABLE orders ADD COLUMN archived boolean DEFAULT false;
+CREATE INDEX idx_orders_customer ON orders (customer_id);
+UPDATE orders SET archived = true WHERE created_at < '2024-01-01';
+SELECT 1;
"""
    assert risky_lines_from_diff(diff) == [
        "services/order/db/V42__orders_index.sql: ALTER TABLE orders ADD COLUMN archived boolean DEFAULT false;",
        "services/order/db/V42__orders_index.sql: CREATE INDEX idx_orders_customer ON orders (customer_id);",
        "services/order/db/V42__orders_index.sql: UPDATE orders SET archived = true WHERE created_at < '2024-01-01';",
    ]

"""Secret shapes planted in tool output: (the secret part, the log/config line that carries it).

Each line is what a real backend returns (a log line, a config diff, an error). The secret part must not
appear anywhere downstream of the tool boundary.
"""

# ruff: noqa: E501  (a data table: one secret and the real-looking line carrying it, per row)
from __future__ import annotations

# fmt: off
SECRETS: dict[str, tuple[str, str]] = {
    "aws_access_key": ("AKIAIOSFODNN7EXAMPLE", "aws creds loaded key_id=AKIAIOSFODNN7EXAMPLE"),
    "aws_secret_key": ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "github_pat": ("ghp_1234567890abcdefghijklmnopqrstuvwxyz", "git clone failed token ghp_1234567890abcdefghijklmnopqrstuvwxyz"),
    "github_fine": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU", "using github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU"),
    "slack_bot": ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack notify with xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    "slack_webhook": ("T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX failed"),
    "openai": ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd", "OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"),
    "anthropic": ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-abcdEFGH", "llm key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-abcdEFGH rejected"),
    "stripe": ("sk_live_51HqLyjWDarjtT1zdp7dcXYZabc", "charge failed with key sk_live_51HqLyjWDarjtT1zdp7dcXYZabc"),
    "google_api": ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "maps call key=AIzaSyA-1234567890abcdefghijklmnopqrstu quota"),
    "jwt": ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "auth ok jwt=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    "bearer": ("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg", "outbound request Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg"),
    "basic_auth": ("YWRtaW46c3VwZXJzZWNyZXRwYXNzd29yZA==", "Authorization: Basic YWRtaW46c3VwZXJzZWNyZXRwYXNzd29yZA=="),
    "postgres_url": ("Pg-S3cret-Pw-771", "connect postgres://orders:Pg-S3cret-Pw-771@db-primary:5432/orders refused"),
    "mysql_url": ("My-S3cret-Pw-772", "jdbc:mysql://app:My-S3cret-Pw-772@mysql-0:3306/shop timeout"),
    "redis_url": ("Rd-S3cret-Pw-773", "redis://:Rd-S3cret-Pw-773@cache:6379/0 connection reset"),
    "mongodb_url": ("Mg-S3cret-Pw-774", "mongodb+srv://svc:Mg-S3cret-Pw-774@cluster0.example.net/db"),
    "amqp_url": ("Mq-S3cret-Pw-775", "amqp://guest:Mq-S3cret-Pw-775@rabbit:5672/ closed"),
    "password_kv": ("Hunter2-Pass-776", "spring.datasource.password=Hunter2-Pass-776"),
    "password_json": ("Js0n-Pass-777", '{"user": "app", "password": "Js0n-Pass-777"}'),
    "yaml_secret": ("Yaml-Secret-778", "client_secret: Yaml-Secret-778"),
    "private_key": ("MIIEowIBAAKCAQEA7bq98R", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98R\nabcdefghijklmnop\n-----END RSA PRIVATE KEY-----"),
    "openssh_key": ("b3BlbnNzaC1rZXktdjEAAAAA", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"),
    "api_key_header": ("k3y-9f8e7d6c5b4a3928", "X-Api-Key: k3y-9f8e7d6c5b4a3928"),
    "gitlab": ("glpat-AbCdEfGhIjKlMnOpQrSt", "runner token glpat-AbCdEfGhIjKlMnOpQrSt expired"),
    "npm": ("npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "//registry.npmjs.org/:_authToken=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    "sendgrid": ("SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq", "mail via SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"),
    "url_query_token": ("qT0k3n-abcdef123456", "GET /callback?access_token=qT0k3n-abcdef123456&state=1"),
    "azure_conn": ("AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFGH+/==", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFGH+/==;EndpointSuffix=core.windows.net"),
    "twilio": ("SK0123456789abcdef0123456789abcdef", "twilio client init with SK0123456789abcdef0123456789abcdef failed"),
    "mailgun": ("key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "mailgun send with key-3ax6xnjp29jd6fds4gc373sgvjxteol0 rejected"),
    "hex_api_key": ("9f86d081884c7d659a2feaa0c55ad015", "upstream call apikey=9f86d081884c7d659a2feaa0c55ad015 denied"),
}
# fmt: on

"""The code behind a version: the application's commits between two image tags, for query_deploy_diff.

A deploy repository says which image runs; the application's own repository says what changed in it. When a deploy
changes an image tag, the commits between the two tags (subjects, authors, files) come from a local clone per
service (tools/deploys/appcode/git.py) or from GitHub's compare API (tools/deploys/appcode/github.py), each version
mapped to a git ref by a pattern (tools/deploys/appcode/source.py).
"""

from tools.deploys.appcode.source import CodeSource, RefPattern, image_change

__all__ = ["CodeSource", "RefPattern", "image_change"]

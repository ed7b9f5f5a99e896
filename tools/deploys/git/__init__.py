"""Deploys from a git repository: tags, or GitOps commits to service folders (source.py is the DeploySource)."""

from tools.deploys.git.source import GitDeploys

__all__ = ["GitDeploys"]

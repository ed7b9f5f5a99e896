"""Placeholder: filled in by the owning work stream."""

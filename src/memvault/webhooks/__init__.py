"""Signed webhooks: memory events and read alerts, delivered durably to a tenant's endpoints."""

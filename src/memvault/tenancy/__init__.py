"""Tenants and principals: API keys, the principal cache, key-digest upgrades, tenant records and
the deployment start-up checks. Beneath the vault; imports only the store and the keyring."""

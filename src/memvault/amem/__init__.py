"""A-MEM on decrypted scoped views: judges, note construction, linking, evolution,
consolidation and the quality scan. Everything here works on one scope's decrypted notes and
never reaches across a scope; the vault hands it views and applies what it decides."""

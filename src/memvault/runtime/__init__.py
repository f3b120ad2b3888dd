"""The composition root: opens the vault, its infrastructure, the eraser and background
maintenance from `Settings` (`memvault.runtime.factory.open_services`)."""

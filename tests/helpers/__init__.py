"""What tests share: record builders and readers. Tests import from here,
never from a conftest or another test module; conftest fixtures wrap these."""

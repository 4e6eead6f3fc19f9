/// The API contract, `openapi.yaml`, as the JSON the server serves at `/v1/openapi.json`
/// (`Generated/Document.swift`, written with the rest of the generated code by `generate.sh`).
public enum ContractDocument {}

//! Generates the API types from `proto/` with a vendored `protoc`, so no
//! system protobuf compiler is needed.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY-free: build scripts run single-threaded before any other code.
    // `PROTOC` is how prost-build is told which compiler to use.
    // (std::env::set_var is unsafe in edition 2024, so pass it via the config.)
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let proto_root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../proto");
    let file = proto_root.join("agentd/v1/agentd.proto");
    println!("cargo:rerun-if-changed={}", file.display());

    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    tonic_prost_build::configure()
        // Written by hand, to answer with agents encoded ahead (see there).
        .extern_path(
            ".agentd.v1.ListAgentsResponse",
            "crate::list_response::ListAgentsResponse",
        )
        .file_descriptor_set_path(out_dir.join("agentd_v1_descriptor.bin"))
        .compile_with_config(config, &[file], &[proto_root])?;
    Ok(())
}

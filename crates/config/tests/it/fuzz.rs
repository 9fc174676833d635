//! Arbitrary text as a project file never panics the loader: it loads or returns problems.

use proptest::prelude::*;

use crate::{CONFIG, TARGET, VALID, tap};

fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("\n".to_owned()),
        Just("  ".to_owned()),
        Just("- ".to_owned()),
        Just(": ".to_owned()),
        Just("&a ".to_owned()),
        Just("*a".to_owned()),
        Just("<<: ".to_owned()),
        Just("!vault |".to_owned()),
        Just("{{ env_var['X'] }}".to_owned()),
        Just("{% if".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("data_diff".to_owned()),
        Just("schemas".to_owned()),
        Just("$ANSIBLE_VAULT;1.1;AES256\n".to_owned()),
        "[a-z0-9_ ,.#|>-]{0,8}",
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
}

/// Replaces parts of a valid tap file with random text.
fn mutated_tap() -> impl Strategy<Value = String> {
    let valid = tap("", "", VALID);
    (0..valid.len(), 0..20usize, yamlish()).prop_map(move |(at, cut, noise)| {
        let start = (0..=at).rev().find(|i| valid.is_char_boundary(*i)).unwrap_or(0);
        let end = (start + cut..=valid.len()).find(|i| valid.is_char_boundary(*i)).unwrap_or(valid.len());
        format!("{}{noise}{}", &valid[..start], &valid[end..])
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_tap_files_never_panic(text in prop_oneof![yamlish(), mutated_tap()]) {
        let dir = crate::project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_x.yml", &text)]);
        let result = datadiff_config::load_with(dir.path(), &crate::options(Some("s")));
        if let Err(error) = result {
            prop_assert!(!error.problems().is_empty() || error.to_string().contains("directory"));
        }
    }

    #[test]
    fn arbitrary_datadiff_yml_never_panics(text in yamlish()) {
        let dir = crate::project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_p.yml", &tap("", "", VALID)), ("datadiff.yml", &text)]);
        let _ = datadiff_config::load_with(dir.path(), &crate::options(None));
    }
}

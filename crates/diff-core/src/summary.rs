//! A bounded summary of a merge: exact counts and the first differences, by key and field
//! name only.

use crate::merge::Change;
use crate::row::{DigestRow, Keyed, ValuesRow};

/// What kind of difference an example is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DifferenceKind {
    /// The key is in the source only.
    MissingInTarget,
    /// The key is in the target only.
    ExtraInTarget,
    /// The key is on both sides with different values.
    Changed,
}

impl DifferenceKind {
    /// The stored spelling: `MISSING_IN_TARGET`, `EXTRA_IN_TARGET` or `CHANGED`.
    pub fn as_str(self) -> &'static str {
        match self {
            DifferenceKind::MissingInTarget => "MISSING_IN_TARGET",
            DifferenceKind::ExtraInTarget => "EXTRA_IN_TARGET",
            DifferenceKind::Changed => "CHANGED",
        }
    }
}

/// Rows that can say which of their fields differ from another row with the same key.
pub trait ChangedFields {
    /// Indexes of the differing fields; empty when the representation cannot tell (a digest).
    fn changed_fields(&self, other: &Self) -> Vec<usize>;
}

impl ChangedFields for ValuesRow {
    fn changed_fields(&self, other: &Self) -> Vec<usize> {
        self.differing_fields(other).collect()
    }
}

impl<K> ChangedFields for DigestRow<K> {
    fn changed_fields(&self, _other: &Self) -> Vec<usize> {
        Vec::new()
    }
}

impl<R: ChangedFields> ChangedFields for &R {
    fn changed_fields(&self, other: &Self) -> Vec<usize> {
        (**self).changed_fields(*other)
    }
}

/// One recorded difference: the key and, for a changed row, the names of the differing fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example<K> {
    /// The kind of difference.
    pub kind: DifferenceKind,
    /// The row's key.
    pub key: K,
    /// The differing fields' names (empty unless [`DifferenceKind::Changed`]).
    pub fields: Vec<String>,
}

/// Counts of every outcome and the first `max_examples` differences.
///
/// Memory is bounded by `max_examples` whatever the number of rows; recording a matching
/// row allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary<K> {
    field_names: Vec<String>,
    max_examples: usize,
    /// Keys on both sides with equal content.
    pub matched: u64,
    /// Keys in the source only.
    pub missing: u64,
    /// Keys in the target only.
    pub extra: u64,
    /// Keys on both sides with different content.
    pub changed: u64,
    /// The first differences, in key order.
    pub examples: Vec<Example<K>>,
}

impl<K: Clone> Summary<K> {
    /// An empty summary keeping at most `max_examples` examples; `field_names` names the
    /// compared fields by index.
    pub fn new(max_examples: usize, field_names: Vec<String>) -> Self {
        Summary { field_names, max_examples, matched: 0, missing: 0, extra: 0, changed: 0, examples: Vec::new() }
    }

    /// Counts one change and keeps it as an example while there is room.
    pub fn record<R>(&mut self, change: &Change<R>)
    where
        R: Keyed<Key = K> + ChangedFields,
    {
        let kind = match change {
            Change::Same { .. } => {
                self.matched += 1;
                return;
            }
            Change::MissingInTarget(_) => {
                self.missing += 1;
                DifferenceKind::MissingInTarget
            }
            Change::ExtraInTarget(_) => {
                self.extra += 1;
                DifferenceKind::ExtraInTarget
            }
            Change::Changed { .. } => {
                self.changed += 1;
                DifferenceKind::Changed
            }
        };
        if self.examples.len() >= self.max_examples {
            return;
        }
        let fields = match change {
            Change::Changed { source, target } => source
                .changed_fields(target)
                .into_iter()
                .map(|index| self.field_names.get(index).cloned().unwrap_or_else(|| format!("#{index}")))
                .collect(),
            _ => Vec::new(),
        };
        self.examples.push(Example { kind, key: change.key().clone(), fields });
    }

    /// Missing + extra + changed.
    pub fn difference_count(&self) -> u64 {
        self.missing + self.extra + self.changed
    }

    /// Rows seen in the source (matched + changed + missing).
    pub fn source_rows(&self) -> u64 {
        self.matched + self.changed + self.missing
    }

    /// Rows seen in the target (matched + changed + extra).
    pub fn target_rows(&self) -> u64 {
        self.matched + self.changed + self.extra
    }

    /// Whether some differences were counted but not kept as examples.
    pub fn examples_truncated(&self) -> bool {
        self.difference_count() > self.examples.len() as u64
    }

    /// The compared fields' names.
    pub fn field_names(&self) -> &[String] {
        &self.field_names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;
    use crate::merge::merge;
    use crate::value::Value;

    fn row(key: i64, values: &[i64]) -> Result<ValuesRow, String> {
        Ok(ValuesRow { key: Key::Int(key), values: values.iter().map(|&v| Value::Int(v)).collect() })
    }

    #[test]
    fn counts_everything_and_keeps_the_first_examples_with_field_names() {
        let source = vec![row(1, &[1, 1]), row(2, &[2, 2]), row(3, &[3, 3]), row(5, &[5, 5])];
        let target = vec![row(1, &[1, 1]), row(2, &[2, 9]), row(4, &[4, 4]), row(5, &[0, 0])];
        let mut summary = Summary::new(2, vec!["amount".into(), "status".into()]);
        for change in merge(source, target) {
            summary.record(&change.unwrap());
        }
        assert_eq!((summary.matched, summary.missing, summary.extra, summary.changed), (1, 1, 1, 2));
        assert_eq!(summary.difference_count(), 4);
        assert_eq!((summary.source_rows(), summary.target_rows()), (4, 4));
        assert!(summary.examples_truncated());
        assert_eq!(
            summary.examples,
            vec![
                Example { kind: DifferenceKind::Changed, key: Key::Int(2), fields: vec!["status".into()] },
                Example { kind: DifferenceKind::MissingInTarget, key: Key::Int(3), fields: vec![] },
            ]
        );
    }

    #[test]
    fn no_truncation_when_every_difference_fits() {
        let mut summary = Summary::new(5, vec![]);
        for change in merge(vec![row(1, &[])], vec![row(2, &[])]) {
            summary.record(&change.unwrap());
        }
        assert!(!summary.examples_truncated());
        assert_eq!(summary.examples.len(), 2);
        assert_eq!(summary.examples[1].kind.as_str(), "EXTRA_IN_TARGET");
    }
}

//! The paper's four designs: the one place their names are spelled.
//!
//! A design is a coherence protocol (the baseline directory MOESI plus the overlays a MOPED
//! variant adds) together with whether the MPI runtime drives a MOPED. Every entry point
//! parses a design name once, here, into [`Design`]; everything below takes the enum. Run
//! records read back from files (ours, gem5's, a user's) keep the name as text, since the
//! analysis must also place designs it does not know.

use std::fmt;
use std::str::FromStr;

/// One of the designs of the MOPED paper (section 5), the baseline first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Design {
    /// Unmodified directory MOESI; MPI copies message data through shared buffers.
    Baseline,
    /// MOPED's L2 requests (M_GETS, M_GETX); the directory unchanged.
    BaseMoped,
    /// BASEMOPED plus copies of send lines that leave every cache's state unchanged.
    OptCopy,
    /// OPTCOPY plus receive lines granted without their old data.
    OptCache,
}

impl Design {
    /// Every design, in the paper's order (the baseline first).
    pub const ALL: [Design; 4] = [
        Design::Baseline,
        Design::BaseMoped,
        Design::OptCopy,
        Design::OptCache,
    ];

    /// The MOPED designs, in the paper's order.
    pub const MOPED: [Design; 3] = [Design::BaseMoped, Design::OptCopy, Design::OptCache];

    /// The name used on command lines, in files and in results (`optcopy`).
    pub const fn name(self) -> &'static str {
        match self {
            Design::Baseline => "baseline",
            Design::BaseMoped => "basemoped",
            Design::OptCopy => "optcopy",
            Design::OptCache => "optcache",
        }
    }

    /// The paper's spelling (`OPTCOPY`).
    pub const fn label(self) -> &'static str {
        match self {
            Design::Baseline => "baseline",
            Design::BaseMoped => "BASEMOPED",
            Design::OptCopy => "OPTCOPY",
            Design::OptCache => "OPTCACHE",
        }
    }

    /// One line about the design.
    pub const fn description(self) -> &'static str {
        match self {
            Design::Baseline => "unmodified directory MOESI",
            Design::BaseMoped => {
                "MOPED requests in the L2 controller (M_GETS, M_GETX); directory unchanged"
            }
            Design::OptCopy => {
                "BASEMOPED plus copies of send lines that leave every cache's state unchanged"
            }
            Design::OptCache => "OPTCOPY plus receive lines granted without their old data (fills)",
        }
    }

    /// True if the design has a MOPED beside each L2.
    pub const fn has_moped(self) -> bool {
        !matches!(self, Design::Baseline)
    }

    /// The names of every design, comma-separated (for error messages).
    pub fn names_list() -> String {
        Self::ALL.map(Design::name).join(", ")
    }

    /// The design named `name` (exactly as [`Design::name`] spells it).
    pub fn from_name(name: &str) -> Option<Design> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// A name that is not a design.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown design `{0}`, expected one of: {list}", list = Design::names_list())]
pub struct UnknownDesign(pub String);

impl FromStr for Design {
    type Err = UnknownDesign;

    fn from_str(s: &str) -> Result<Design, UnknownDesign> {
        Design::from_name(s).ok_or_else(|| UnknownDesign(s.to_string()))
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Design {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Design {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Design, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known_ones() {
        for d in Design::ALL {
            assert_eq!(d.name().parse::<Design>(), Ok(d));
            assert_eq!(d.to_string(), d.name());
        }
        let e = "optcpy".parse::<Design>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown design `optcpy`, expected one of: baseline, basemoped, optcopy, optcache"
        );
        assert!(Design::MOPED.iter().all(|d| d.has_moped()));
        assert!(!Design::Baseline.has_moped());
    }

    #[test]
    fn serde_uses_the_name() {
        let j = serde_json::to_string(&Design::OptCache).unwrap();
        assert_eq!(j, "\"optcache\"");
        assert_eq!(
            serde_json::from_str::<Design>(&j).unwrap(),
            Design::OptCache
        );
        assert!(serde_json::from_str::<Design>("\"x\"").is_err());
    }
}

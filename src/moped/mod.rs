//! The MOPED device (paper, section 4): one per core, beside its L2 controller.
//!
//! The device is plain Rust with a narrow interface to whatever hosts it (the embedded
//! simulator here, gem5 through a C ABI later): port accesses, messages from other MOPEDs
//! and the L2 controller's answers come in; coherence requests, messages and port answers
//! go out, each stamped with the host's cycle. Nothing here knows the event engine.
//!
//! Parts, one file each:
//! - `ports`: the MMIO data and poll ports and the values that travel through them;
//! - `desc`: the outstanding descriptor table and its status bits;
//! - `matching`: MPI matching at the matching MOPED, and a reference model of it;
//! - `xlate`: the page walker, reading the tables of `os::pagetable`;
//! - `copy`: the copy unit with its send and receive lines.

pub mod copy;
pub mod desc;
pub mod device;
pub mod matching;
pub mod ports;
pub mod xlate;

/// A MOPED's index: the same as its core's.
pub type MopedId = u8;

/// A descriptor ID as processes see it: the MOPED that holds the descriptor and the
/// descriptor's index in that MOPED's table, so stores and polls from a process that moved
/// cores can be forwarded to the right MOPED.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DescId {
    pub moped: MopedId,
    pub index: u8,
}

impl DescId {
    /// The 16-bit form carried in port values: MOPED id in the high byte.
    pub fn to_bits(self) -> u16 {
        (self.moped as u16) << 8 | self.index as u16
    }

    pub fn from_bits(bits: u16) -> DescId {
        DescId {
            moped: (bits >> 8) as MopedId,
            index: bits as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desc_id_round_trips_through_its_bits() {
        for bits in [0u16, 1, 0x00ff, 0x0100, 0x0f3f, 0xffff] {
            assert_eq!(DescId::from_bits(bits).to_bits(), bits);
        }
        let id = DescId {
            moped: 15,
            index: 63,
        };
        assert_eq!(id.to_bits(), 0x0f3f);
    }
}

//! `clockscope dmesg`'s formats: [`text`] (the timeline, the summary, what it
//! means for PostgreSQL and what to do); its JSON is [`crate::export::json`]
//! of the stamped [`crate::model::dmesg::DmesgReport`].

pub mod text;

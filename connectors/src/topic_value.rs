//! stub
use crate::model::Batch;
/// stub
pub struct TopicTemplate;
/// stub
pub struct TopicValueOptions;
/// stub
pub fn parse_topic_value(_input: &[u8]) -> Batch {
    Batch::default()
}

//! A pooled connection prepares a statement once and keeps it across
//! borrows (`mnemo_postgres::Pooled::query`): the store's statements cost
//! one round trip each, not a parse and then an execute.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_postgres::{Pool, Runtime, Target};
use mnemo_test_support::postgres::test_url;

#[test]
fn a_pooled_connection_prepares_a_statement_once() {
    let Some(url) = test_url() else { return };
    let rt = Runtime::start().unwrap();
    let pool = Pool::new(Target::parse(&url).unwrap(), String::new(), 1);
    let (sum, prepared) = rt
        .run(async move {
            let mut sum = 0i32;
            for _ in 0..3 {
                let p = pool.get().await.unwrap();
                for i in 0..4i32 {
                    sum += p
                        .query_one("SELECT $1::int + 1", &[&i])
                        .await
                        .unwrap()
                        .get::<_, i32>(0);
                }
                pool.put(p);
            }
            let p = pool.get().await.unwrap();
            let prepared: i64 = p
                .client
                .query_one(
                    "SELECT count(*) FROM pg_prepared_statements \
                     WHERE statement = 'SELECT $1::int + 1'",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            (sum, prepared)
        })
        .unwrap();
    assert_eq!(sum, 3 * (1 + 2 + 3 + 4));
    assert_eq!(
        prepared, 1,
        "the statement is kept prepared on its connection"
    );
}

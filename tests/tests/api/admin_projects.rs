//! `/admin/api/SLUG` (DELETE): destroying a project.

use server::store::Role;
use tests::panel::{account, last_audit, Panel};
use tests::TestApp;

#[tokio::test]
async fn destroying_a_project_takes_it_off_its_admins() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    app.project("p2", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "pat", Role::Project, &["p1", "p2"]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    let r = root
        .send(
            reqwest::Method::DELETE,
            "/admin/api/p1?confirm=p1",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let pat = app.store.people().account("pat").await.unwrap().unwrap();
    assert_eq!(pat.projects, ["p2"], "a new p1 would not be pat's");
    assert_eq!(
        last_audit(&mut root, "project.destroy").await["detail"],
        "admins removed: pat"
    );
}

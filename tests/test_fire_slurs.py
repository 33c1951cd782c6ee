from rebuttal.fire.slurs import name_the_people, people_named, slur_used


def test_each_slur_becomes_the_people_it_names_with_number_article_and_case():
    assert name_the_people("Niggas are inferior and a nigger is worthless.") == (
        "Black people are inferior and a Black person is worthless.", 2)
    assert name_the_people("Homeowners who use beaner labor are traitors.") == (
        "Homeowners who use Latino labor are traitors.", 1)
    assert name_the_people("A chink wrote it, said the trannies.") == ("An Asian person wrote it, said the trans women.", 2)
    assert name_the_people('Calling them "kikes" is fine.') == ('Calling them "Jewish people" is fine.', 1)  # quoted too
    assert people_named("retarded") == "disabled" and people_named("Bitches") == "women"
    assert name_the_people("Gay men and Jewish families live here in peace.") == (
        "Gay men and Jewish families live here in peace.", 0)


def test_a_named_post_has_no_slur_left_for_the_model_to_echo():
    post = "Faggots and dykes are sick, retards all of them, those feminazi bitches too."
    named, count = name_the_people(post)
    assert count == 5 and slur_used(named) is None and slur_used(post) == "Faggots"
    assert named == "Gay men and lesbians are sick, disabled people all of them, those feminist women too."
